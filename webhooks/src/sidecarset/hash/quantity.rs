//! Kubernetes `resource.Quantity` as apimachinery parses and prints it (spec/sidecarset.md §7.1 "resource
//! quantities rounded up to milli scale", §7.2 "quantities in canonical form").
//!
//! [`Quantity::parse`] follows `ParseQuantity`: the int64 fast path (which remembers the input text when it is
//! already canonical, so `"+1"` prints as `"+1"`), and otherwise a decimal path rounded up to nano and capped
//! at 2^63-1. [`Quantity::round_up_milli`] is `RoundUp(-3)` (what `SetDefaults_ResourceList` does), and
//! `Display` is `Quantity.String()` (the form `MarshalJSON` writes).
//!
//! Supported: every syntax `ParseQuantity` accepts (plain and signed numbers, fractions, the decimal suffixes
//! `n u m k M G T P E`, the binary suffixes `Ki Mi Gi Ti Pi Ei`, exponents `e3` / `E-2`). Not supported:
//! numbers whose digits do not fit 128-bit arithmetic (more than about 30 significant digits); they are
//! reported as [`QuantityError::Unsupported`] and callers leave such text unchanged.

use std::fmt;

/// Why a quantity text is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// apimachinery's `ErrFormatWrong`.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// apimachinery's `ErrSuffix`.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// apimachinery's `ErrNumeric`.
    #[error("unable to parse numeric value")]
    Numeric,
    /// Valid for Go, but too many digits for this implementation's 128-bit arithmetic.
    #[error("quantity {0:?} has more digits than this implementation supports")]
    Unsupported(String),
}

/// How a quantity prints (apimachinery's `Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `1e3`.
    DecimalExponent,
    /// `1Ki`.
    BinarySI,
    /// `1k`, `100m`.
    DecimalSI,
}

/// The value: `Int` is `value × 10^scale` (apimachinery's `int64Amount`), `Dec` is `unscaled × 10^-scale`
/// (an `inf.Dec`, whose scale counts fractional digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Amount {
    Int { value: i64, scale: i32 },
    Dec { unscaled: i128, scale: i32 },
}

/// A parsed `resource.Quantity`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    amount: Amount,
    format: Format,
    /// The input text, kept when Go keeps it (`q.s`): already canonical on the fast path.
    text: Option<String>,
}

/// 2^63 - 1, the cap of the decimal path (`maxAllowed`).
const MAX_ALLOWED: i128 = i64::MAX as i128;
/// `Nano`: the finest scale the decimal path keeps.
const NANO: i32 = -9;
/// `maxInt64Factors`.
const MAX_INT64_FACTORS: i32 = 18;

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// `x / 10^n` rounded away from zero (inf.RoundUp, `negativeScaleInt64`).
fn div_pow10_away(x: i128, n: u32) -> i128 {
    match pow10(n) {
        Some(d) => {
            let q = x / d;
            if x % d == 0 { q } else { q + x.signum() }
        }
        // 10^n exceeds any i128: the quotient is 0 and the remainder is x.
        None => x.signum(),
    }
}

/// Rescales `unscaled × 10^-scale` to `target` fractional digits, rounding away from zero. `None` when the
/// result does not fit (only possible when scaling up, i.e. for values far beyond the cap).
fn rescale(unscaled: i128, scale: i32, target: i32) -> Option<i128> {
    if scale > target {
        Some(div_pow10_away(unscaled, (scale - target).unsigned_abs()))
    } else {
        unscaled.checked_mul(pow10((target - scale).unsigned_abs())?)
    }
}

struct Parts<'a> {
    positive: bool,
    /// Sign, leading zeros, numerator, `.` and denominator: what `inf.Dec.SetString` reads.
    value: &'a str,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// `parseQuantityString`.
fn split(s: &str) -> Result<Parts<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            value: "0",
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            value: s,
            num: &s[num_start..],
            denom: "",
            suffix: "",
        });
    }
    let num = if pos == num_start {
        "0"
    } else {
        &s[num_start..pos]
    };
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[denom_start..pos];
        if pos >= end {
            return Ok(Parts {
                positive,
                value: s,
                num,
                denom,
                suffix: "",
            });
        }
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::Format);
    }
    Ok(Parts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// `quantitySuffixer.interpret`: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((10, e, Format::DecimalSI));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = binary {
        return Some((2, e, Format::BinarySI));
    }
    let rest = suffix
        .strip_prefix('e')
        .or_else(|| suffix.strip_prefix('E'))?;
    if rest.is_empty() {
        return None;
    }
    // strconv.ParseInt(rest, 10, 64), then int32(...) truncation as in Go.
    let e: i64 = rest.parse().ok()?;
    Some((10, e as i32, Format::DecimalExponent))
}

/// `inf.Dec.SetString`: (unscaled, scale).
fn parse_decimal(value: &str) -> Result<(i128, i32), QuantityError> {
    let (negative, digits) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(QuantityError::Numeric);
    }
    let mut unscaled: i128 = 0;
    for c in int_part.bytes().chain(frac_part.bytes()) {
        if !c.is_ascii_digit() {
            return Err(QuantityError::Numeric);
        }
        unscaled = unscaled
            .checked_mul(10)
            .and_then(|u| u.checked_add(i128::from(c - b'0')))
            .ok_or_else(|| QuantityError::Unsupported(value.to_owned()))?;
    }
    let scale = i32::try_from(frac_part.len()).map_err(|_| QuantityError::Numeric)?;
    Ok((if negative { -unscaled } else { unscaled }, scale))
}

impl Quantity {
    /// `resource.ParseQuantity` (the caller trims whitespace, as `UnmarshalJSON` does).
    ///
    /// # Errors
    /// [`QuantityError`] with apimachinery's message when Go would refuse the text, or
    /// [`QuantityError::Unsupported`] for digits beyond 128-bit arithmetic.
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::Format);
        }
        if s == "0" {
            return Ok(Self {
                amount: Amount::Int { value: 0, scale: 0 },
                format: Format::DecimalSI,
                text: Some(s.to_owned()),
            });
        }
        let parts = split(s)?;
        let (base, exponent, format) = interpret(parts.suffix).ok_or(QuantityError::Suffix)?;
        let digits = i32::try_from(parts.num.len() + parts.denom.len()).unwrap_or(i32::MAX);
        let (mut scale, precision, mantissa) = match format {
            Format::DecimalExponent | Format::DecimalSI => {
                (exponent, MAX_INT64_FACTORS.saturating_sub(digits), 1i64)
            }
            Format::BinarySI if exponent >= 0 && parts.denom.is_empty() => {
                let num_len = i32::try_from(parts.num.len()).unwrap_or(i32::MAX);
                // 15 - len(num) - int32(float32(exponent)*3/10) - 1; exponents are multiples of 10.
                (
                    0,
                    15i32.saturating_sub(num_len) - exponent * 3 / 10 - 1,
                    1i64 << exponent,
                )
            }
            Format::BinarySI => (0, -1, 1),
        };
        if precision >= 0 {
            scale -= i32::try_from(parts.denom.len()).unwrap_or(i32::MAX);
            if scale >= NANO {
                let shifted = format!("{}{}", parts.num, parts.denom);
                let value: i64 = shifted.parse().map_err(|_| QuantityError::Numeric)?;
                if let Some(result) = value.checked_mul(mantissa) {
                    let result = if parts.positive { result } else { -result };
                    let canonical = match format {
                        Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                        _ => {
                            scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
                        }
                    };
                    return Ok(Self {
                        amount: Amount::Int {
                            value: result,
                            scale,
                        },
                        format,
                        text: canonical.then(|| s.to_owned()),
                    });
                }
            }
        }
        Self::parse_slow(s, &parts, base, exponent, format)
    }

    /// The `inf.Dec` path of `ParseQuantity`.
    fn parse_slow(
        s: &str,
        parts: &Parts<'_>,
        base: u32,
        exponent: i32,
        mut format: Format,
    ) -> Result<Self, QuantityError> {
        let unsupported = || QuantityError::Unsupported(s.to_owned());
        let (mut unscaled, mut scale) = parse_decimal(parts.value)?;
        if base == 10 {
            scale = scale.checked_sub(exponent).ok_or_else(unsupported)?;
        } else {
            unscaled = unscaled
                .checked_mul(1i128 << exponent)
                .ok_or_else(unsupported)?;
        }
        let negative = unscaled < 0;
        let mut magnitude = unscaled.abs();
        if magnitude != 0 {
            // Round up to nano; a value too large to rescale is far beyond the cap.
            magnitude = rescale(magnitude, scale, -NANO).unwrap_or(i128::MAX);
            scale = -NANO;
            if magnitude > MAX_ALLOWED * 1_000_000_000 {
                magnitude = MAX_ALLOWED;
                scale = 0;
            }
            // 0 < amount < 1 is not printed in base 1024.
            if format == Format::BinarySI && magnitude < 1_000_000_000 && scale == -NANO {
                format = Format::DecimalSI;
            }
        }
        Ok(Self {
            amount: Amount::Dec {
                unscaled: if negative { -magnitude } else { magnitude },
                scale,
            },
            format,
            text: None,
        })
    }

    /// `RoundUp(-3)`: rounds away from zero to milli units, as `SetDefaults_ResourceList` does.
    pub fn round_up_milli(&mut self) {
        match self.amount {
            Amount::Int { value, scale } => {
                if scale >= -3 {
                    return;
                }
                self.text = None;
                let value = div_pow10_away(i128::from(value), (-3 - scale).unsigned_abs());
                // |result| <= |value|, so it still fits.
                self.amount = Amount::Int {
                    value: i64::try_from(value).unwrap_or(i64::MAX),
                    scale: -3,
                };
            }
            Amount::Dec { unscaled, scale } => {
                self.text = None;
                if let Some(unscaled) = rescale(unscaled, scale, 3) {
                    self.amount = Amount::Dec { unscaled, scale: 3 };
                }
            }
        }
    }

    fn is_zero(&self) -> bool {
        match self.amount {
            Amount::Int { value, .. } => value == 0,
            Amount::Dec { unscaled, .. } => unscaled == 0,
        }
    }

    /// The integer value when it is exact at scale 0 (`AsScale(0)` exact), for base-1024 printing.
    fn exact_integer(&self) -> Option<i128> {
        match self.amount {
            Amount::Int { value, scale } if scale >= 0 => {
                i128::from(value).checked_mul(pow10(scale.unsigned_abs())?)
            }
            Amount::Int { value, scale } => {
                let d = pow10(scale.unsigned_abs())?;
                (i128::from(value) % d == 0).then(|| i128::from(value) / d)
            }
            Amount::Dec { unscaled, scale } if scale >= 0 => {
                let d = pow10(scale.unsigned_abs())?;
                (unscaled % d == 0).then(|| unscaled / d)
            }
            Amount::Dec { unscaled, scale } => unscaled.checked_mul(pow10(scale.unsigned_abs())?),
        }
    }

    /// `-1024 < q < 1024`.
    fn below_1024(&self) -> bool {
        let (unscaled, scale) = match self.amount {
            Amount::Int { value, scale } => (i128::from(value), -scale),
            Amount::Dec { unscaled, scale } => (unscaled, scale),
        };
        if scale <= 0 {
            return match pow10(scale.unsigned_abs()).and_then(|m| unscaled.checked_mul(m)) {
                Some(v) => v.abs() < 1024,
                None => false,
            };
        }
        match pow10(scale.unsigned_abs()).and_then(|m| m.checked_mul(1024)) {
            Some(limit) => unscaled.abs() < limit,
            None => true,
        }
    }

    /// `AsCanonicalBytes`: a mantissa without trailing factors of ten and an exponent that is a multiple of 3.
    fn canonical_decimal(&self) -> (i128, i32) {
        let (mut mantissa, mut exponent) = match self.amount {
            Amount::Int { value, scale } => (i128::from(value), scale),
            Amount::Dec { unscaled, scale } => (unscaled, -scale),
        };
        while mantissa != 0 && mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        while exponent % 3 != 0 {
            mantissa *= 10;
            exponent -= 1;
        }
        (mantissa, exponent)
    }
}

fn decimal_suffix(exponent: i32) -> &'static str {
    // An exponent outside the table prints no suffix, as Go's constructBytes does.
    match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

fn binary_suffix(times: u32) -> &'static str {
    match times {
        1 => "Ki",
        2 => "Mi",
        3 => "Gi",
        4 => "Ti",
        5 => "Pi",
        6 => "Ei",
        _ => "",
    }
}

/// `Quantity.String()`: the kept input text, or `CanonicalizeBytes`.
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = &self.text {
            return f.write_str(text);
        }
        if self.is_zero() {
            return f.write_str("0");
        }
        let mut format = self.format;
        let mut binary = None;
        if format == Format::BinarySI {
            match self.exact_integer() {
                Some(v) if !self.below_1024() => binary = Some(v),
                _ => format = Format::DecimalSI,
            }
        }
        if let Some(mut v) = binary {
            let mut times = 0;
            while v.abs() >= 1024 && v % 1024 == 0 {
                v /= 1024;
                times += 1;
            }
            return write!(f, "{v}{}", binary_suffix(times));
        }
        let (mantissa, exponent) = self.canonical_decimal();
        match format {
            Format::DecimalExponent if exponent != 0 => write!(f, "{mantissa}e{exponent}"),
            Format::DecimalExponent => write!(f, "{mantissa}"),
            _ => write!(f, "{mantissa}{}", decimal_suffix(exponent)),
        }
    }
}

/// The canonical text of a quantity written as `text` (`ParseQuantity` then `String()`).
///
/// # Errors
/// As [`Quantity::parse`].
pub fn canonical(text: &str) -> Result<String, QuantityError> {
    Ok(Quantity::parse(text.trim())?.to_string())
}

/// The canonical text after rounding up to milli units (`SetDefaults_ResourceList`).
///
/// # Errors
/// As [`Quantity::parse`].
pub fn canonical_milli(text: &str) -> Result<String, QuantityError> {
    let mut q = Quantity::parse(text.trim())?;
    q.round_up_milli();
    Ok(q.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> String {
        canonical(s).unwrap()
    }

    fn m(s: &str) -> String {
        canonical_milli(s).unwrap()
    }

    #[test]
    fn canonical_forms_match_apimachinery() {
        // Expected values from apimachinery's quantity_test.go tables and the rules of CanonicalizeBytes.
        for (input, want) in [
            ("0", "0"),
            ("0m", "0"),
            ("000", "0"),
            ("-0", "0"),
            ("1", "1"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("0.1", "100m"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            (".5", "500m"),
            ("1000", "1k"),
            ("1000000", "1M"),
            ("1200", "1200"),
            ("100M", "100M"),
            ("1k", "1k"),
            ("1G", "1G"),
            ("1e3", "1e3"),
            ("1000e0", "1e3"),
            ("12e-1", "1200e-3"),
            ("1E3", "1E3"),
            ("1Ki", "1Ki"),
            ("1024", "1024"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("0.5Gi", "512Mi"),
            ("1.5Gi", "1536Mi"),
            ("2.5Ki", "2560"),
            ("0.5Ki", "512"),
            ("1Ei", "1Ei"),
            ("8Ei", "9223372036854775807"),
            ("12345678901234567890", "9223372036854775807"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("1u", "1u"),
            ("1500u", "1500u"),
            ("+1", "+1"),
            ("-100m", "-100m"),
            ("0100m", "0100m"),
            ("1.G", "1.G"),
        ] {
            assert_eq!(c(input), want, "canonical({input:?})");
        }
    }

    #[test]
    fn rounds_up_to_milli_like_set_defaults_resource_list() {
        for (input, want) in [
            ("1u", "1m"),
            ("1500u", "2m"),
            ("0.0001", "1m"),
            ("100m", "100m"),
            ("1n", "1m"),
            ("2Gi", "2Gi"),
            ("1.1Mi", "1153433600m"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("123Mi", "123Mi"),
            ("-1u", "-1m"),
        ] {
            assert_eq!(m(input), want, "milli({input:?})");
        }
    }

    #[test]
    fn refuses_what_parse_quantity_refuses() {
        assert_eq!(Quantity::parse(""), Err(QuantityError::Format));
        assert_eq!(Quantity::parse("1x"), Err(QuantityError::Format));
        assert_eq!(Quantity::parse("1 m"), Err(QuantityError::Format));
        assert_eq!(Quantity::parse("1K"), Err(QuantityError::Suffix));
        assert_eq!(Quantity::parse("1mi"), Err(QuantityError::Suffix));
        assert_eq!(Quantity::parse("1e"), Err(QuantityError::Suffix));
        assert!(matches!(
            Quantity::parse(&"9".repeat(60)),
            Err(QuantityError::Unsupported(_))
        ));
    }
}
