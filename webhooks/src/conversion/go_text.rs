//! Text exactly as OpenKruise's Go code produces or accepts it: `strconv.Quote`, `strconv.ParseInt` errors,
//! `intstr.Parse`, `time.Parse(time.RFC3339)` re-formatted in UTC, and `encoding/json` string escaping.

use serde_json::Value;

pub(super) use crate::json::go::go_quote as quote;

/// Go's `strconv.ParseInt(s, 10, bits)`, with its error text
/// (`strconv.ParseInt: parsing "x": invalid syntax` / `value out of range`).
pub(super) fn parse_int(s: &str, bits: u32) -> Result<i64, String> {
    let syntax = || format!("strconv.ParseInt: parsing {}: invalid syntax", quote(s));
    let range = || format!("strconv.ParseInt: parsing {}: value out of range", quote(s));
    let (negative, digits) = match s.as_bytes().first() {
        None => return Err(syntax()),
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        Some(_) => (false, s),
    };
    if digits.is_empty() {
        return Err(syntax());
    }
    // ParseUint(digits, 10, bits): a range error wins over a later bad digit, as in Go.
    let max_unsigned: u64 = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut n: u64 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            return Err(syntax());
        }
        let next = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')));
        match next {
            Some(next) if next <= max_unsigned => n = next,
            _ => return Err(range()),
        }
    }
    let cutoff = 1u64 << (bits.min(64) - 1);
    if (!negative && n >= cutoff) || (negative && n > cutoff) {
        return Err(range());
    }
    // n <= 2^63 here, so the i128 detour cannot overflow.
    let value = if negative {
        -i128::from(n)
    } else {
        i128::from(n)
    };
    i64::try_from(value).map_err(|_| range())
}

/// Go's `strconv.ParseInt(s, 10, 32)`.
pub(super) fn parse_int32(s: &str) -> Result<i32, String> {
    parse_int(s, 32).map(|n| n as i32)
}

/// `intstr.Parse`: an int when `strconv.Atoi` accepts the text (truncated to int32 like `intstr.FromInt`),
/// else the string.
pub(super) fn intstr_parse(s: &str) -> Value {
    match parse_int(s, 64) {
        Ok(n) => Value::from(n as i32),
        Err(_) => Value::String(s.to_owned()),
    }
}

/// `time.Parse(time.RFC3339, s)` then `t.UTC().Format(time.RFC3339)` (what a metav1.Time serialises to):
/// fractional seconds are accepted and dropped, the offset is folded into UTC.
pub(super) fn rfc3339_to_utc(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(range)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(fraction) = rest.strip_prefix('.').or_else(|| rest.strip_prefix(',')) {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest.as_bytes() {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| -> Option<i64> {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i64::from((a - b'0') * 10 + (b - b'0')))
            };
            let (oh, om) = (two(*h1, *h2)?, two(*m1, *m2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let magnitude = oh * 3600 + om * 60;
            if *sign == b'-' { -magnitude } else { magnitude }
        }
        _ => return None,
    };
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let utc = local - offset_seconds;
    let (days, secs) = (utc.div_euclid(86_400), utc.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    ))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A JSON string literal as Go's `encoding/json` writes it (HTML-safe: `<`, `>`, `&`, U+2028, U+2029 escaped).
pub(super) fn json_string(s: &str) -> String {
    let plain = Value::String(s.to_owned()).to_string();
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_like_go() {
        assert_eq!(quote("FOO"), r#""FOO""#);
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("x\ny\t\u{1}"), r#""x\ny\t\x01""#);
        assert_eq!(quote("é\u{a0}"), "\"é\\u00a0\"");
    }

    #[test]
    fn parse_int32_accepts_signs_and_reports_go_errors() {
        assert_eq!(parse_int32("15"), Ok(15));
        assert_eq!(parse_int32("+7"), Ok(7));
        assert_eq!(parse_int32("-2147483648"), Ok(i32::MIN));
        assert_eq!(
            parse_int32("abc"),
            Err(r#"strconv.ParseInt: parsing "abc": invalid syntax"#.to_owned())
        );
        assert_eq!(
            parse_int32(""),
            Err(r#"strconv.ParseInt: parsing "": invalid syntax"#.to_owned())
        );
        assert_eq!(
            parse_int32("+"),
            Err(r#"strconv.ParseInt: parsing "+": invalid syntax"#.to_owned())
        );
        assert_eq!(
            parse_int32(" 5"),
            Err(r#"strconv.ParseInt: parsing " 5": invalid syntax"#.to_owned())
        );
        assert_eq!(
            parse_int32("1_0"),
            Err(r#"strconv.ParseInt: parsing "1_0": invalid syntax"#.to_owned())
        );
        assert_eq!(
            parse_int32("2147483648"),
            Err(r#"strconv.ParseInt: parsing "2147483648": value out of range"#.to_owned())
        );
        assert_eq!(
            parse_int32("-2147483649"),
            Err(r#"strconv.ParseInt: parsing "-2147483649": value out of range"#.to_owned())
        );
        // Go's ParseUint stops at the overflow before it sees the bad digit.
        assert_eq!(
            parse_int32("5000000000x"),
            Err(r#"strconv.ParseInt: parsing "5000000000x": value out of range"#.to_owned())
        );
    }

    #[test]
    fn intstr_parse_prefers_integers() {
        assert_eq!(intstr_parse("2"), Value::from(2));
        assert_eq!(intstr_parse("-3"), Value::from(-3));
        assert_eq!(intstr_parse("50%"), Value::from("50%"));
    }

    #[test]
    fn rfc3339_is_normalised_to_utc_seconds() {
        assert_eq!(
            rfc3339_to_utc("2026-03-01T10:00:00Z").as_deref(),
            Some("2026-03-01T10:00:00Z")
        );
        assert_eq!(
            rfc3339_to_utc("2026-03-01T10:00:00.123456Z").as_deref(),
            Some("2026-03-01T10:00:00Z")
        );
        assert_eq!(
            rfc3339_to_utc("2026-03-01T01:30:00+02:00").as_deref(),
            Some("2026-02-28T23:30:00Z")
        );
        assert_eq!(
            rfc3339_to_utc("2024-02-29T23:00:00-01:00").as_deref(),
            Some("2024-03-01T00:00:00Z")
        );
        assert_eq!(
            rfc3339_to_utc("1999-12-31T23:59:59-00:01").as_deref(),
            Some("2000-01-01T00:00:59Z")
        );
        assert_eq!(rfc3339_to_utc("2025-02-29T00:00:00Z"), None);
        assert_eq!(rfc3339_to_utc("2026-03-01 10:00:00Z"), None);
        assert_eq!(rfc3339_to_utc("2026-03-01T10:00:00"), None);
        assert_eq!(rfc3339_to_utc("2026-03-01T24:00:00Z"), None);
        assert_eq!(rfc3339_to_utc("yesterday"), None);
    }

    #[test]
    fn json_string_is_html_safe_like_go() {
        assert_eq!(json_string("a<b>&\"c\""), r#""a\u003cb\u003e\u0026\"c\"""#);
        assert_eq!(json_string("containerd://abc"), r#""containerd://abc""#);
    }
}
