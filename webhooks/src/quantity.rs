//! Kubernetes `resource.Quantity` (k8s.io/apimachinery `pkg/api/resource`), as released apimachinery parses,
//! compares, adds and prints it. The SidecarSet resources policy (spec/sidecarset.md §5) computes with it and
//! its results must print byte for byte as Go prints them.
//!
//! What is ported, and how:
//! - [`Quantity::parse`] is `ParseQuantity`: the int64 fast path (which remembers the input text when it is
//!   already canonical, so `"+1"` and `"0100m"` print back unchanged), and otherwise the decimal path, rounded
//!   up to nano and, for binary suffixes, capped at 2^63-1.
//! - The two internal representations of Go (`int64Amount` and `inf.Dec`) are kept apart, because a few
//!   observable results depend on which one a value is in: [`Quantity::milli_value`] of a negative decimal
//!   value, and int64 overflow.
//! - `Display` is `Quantity.String()` (what `MarshalJSON` writes): the remembered text, or the canonical form
//!   of `CanonicalizeBytes`.
//! - Arithmetic is exact (`i128` mantissas); nothing goes through floating point.
//!
//! Known limits: decimal-path mantissas are `i128` (about 38 significant digits; Go's are unbounded). Longer
//! inputs are rejected with [`QuantityError::TooPrecise`], sums whose aligned mantissas overflow are rounded
//! at the finer operand's last digits, and a BinarySI value beyond 2^127 prints as DecimalSI. As in released
//! apimachinery (before the 2026 fix that falls back to `e21`), a DecimalSI value whose canonical exponent has
//! no suffix (above `E`, 10^18) prints without one: `1000E` prints as `1`. Go's overflow behaviour is kept:
//! `MilliValue` of an int64 amount that overflows is 0, and float-to-int conversions of the decimal form
//! follow amd64.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// How a quantity prints (apimachinery's `Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `12e6`: a power-of-ten exponent.
    DecimalExponent,
    /// `12Mi`: powers of 1024.
    BinarySI,
    /// `12M`, `100m`: powers of 1000.
    DecimalSI,
}

/// Why a text is not a quantity; the messages are apimachinery's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// `ErrFormatWrong`: the text is not a number followed by a suffix.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    /// `ErrNumeric`: the numeric part could not be read.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// `ErrSuffix`: the suffix is not one Kubernetes knows.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// Valid for Go, but more significant digits than this implementation's 128-bit mantissas hold.
    #[error("quantity {0:?} has more significant digits than this implementation supports")]
    TooPrecise(String),
}

/// The value of a quantity, `mantissa × 10^scale` in both forms (here `scale` is apimachinery's `Scale`, the
/// power of ten; `inf.Dec` counts the other way round).
#[derive(Debug, Clone, Copy)]
enum Amount {
    /// `int64Amount`.
    Int { value: i64, scale: i32 },
    /// `inf.Dec`.
    Dec { unscaled: i128, scale: i32 },
}

/// A Kubernetes resource quantity: an exact decimal value, its [`Format`], and the text Go would print for it.
#[derive(Debug, Clone)]
pub struct Quantity {
    amount: Amount,
    format: Format,
    /// Go's cached `s`: the parsed text when it was already canonical, reused by `String()`.
    text: Option<String>,
}

/// `maxInt64Factors` of released apimachinery.
const MAX_INT64_FACTORS: i64 = 18;
/// `Nano`, the finest scale the parser keeps.
const NANO: i32 = -9;
/// `maxAllowed`: the cap of binary-suffixed quantities.
const MAX_ALLOWED: i128 = i64::MAX as i128;

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// `x / 10^n`, rounded away from zero (`negativeScaleInt64`, `inf.RoundUp`).
fn div_pow10_away(x: i128, n: u32) -> i128 {
    match pow10(n) {
        Some(d) => {
            let q = x / d;
            if x % d == 0 { q } else { q + x.signum() }
        }
        None => x.signum(),
    }
}

/// `positiveScaleInt64`: `base × 10^n`, or `None` on int64 overflow.
fn int_scale_up(base: i64, n: i64) -> Option<i64> {
    if base == 0 || n == 0 {
        return Some(base);
    }
    if n > 18 {
        return None;
    }
    base.checked_mul(10i64.pow(n as u32))
}

/// Splits `unscaled × 10^scale` into its decimal digits (no sign, no trailing zeros) and the power of ten of the
/// last digit; zero is `("", 0)`.
fn normalized(unscaled: i128, scale: i32) -> (String, i64) {
    if unscaled == 0 {
        return (String::new(), 0);
    }
    let mut digits = unscaled.unsigned_abs().to_string();
    let mut exp = i64::from(scale);
    while digits.ends_with('0') {
        digits.pop();
        exp += 1;
    }
    (digits, exp)
}

/// Compares two non-negative normalized decimals.
fn cmp_magnitude(a: &(String, i64), b: &(String, i64)) -> Ordering {
    match (a.0.is_empty(), b.0.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    // The power of ten just above the leading digit decides first.
    let top_a = a.0.len() as i64 + a.1;
    let top_b = b.0.len() as i64 + b.1;
    top_a.cmp(&top_b).then_with(|| {
        let (x, y) = (a.0.as_bytes(), b.0.as_bytes());
        let n = x.len().max(y.len());
        (0..n)
            .map(|i| {
                (
                    x.get(i).copied().unwrap_or(b'0'),
                    y.get(i).copied().unwrap_or(b'0'),
                )
            })
            .map(|(p, q)| p.cmp(&q))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    })
}

impl Amount {
    fn as_dec(self) -> (i128, i32) {
        match self {
            Amount::Int { value, scale } => (i128::from(value), scale),
            Amount::Dec { unscaled, scale } => (unscaled, scale),
        }
    }

    fn signum(self) -> i32 {
        self.as_dec().0.signum() as i32
    }

    fn cmp(self, other: Amount) -> Ordering {
        let (a, sa) = self.as_dec();
        let (b, sb) = other.as_dec();
        match a.signum().cmp(&b.signum()) {
            Ordering::Equal => {}
            o => return o,
        }
        let o = cmp_magnitude(&normalized(a, sa), &normalized(b, sb));
        if a < 0 { o.reverse() } else { o }
    }

    /// `AsScale`: at least `scale`, rounding away from zero; `true` when exact.
    fn as_scale(self, target: i32) -> (Amount, bool) {
        match self {
            Amount::Int { value, scale } => {
                if scale >= target {
                    return (self, true);
                }
                let n = (i64::from(target) - i64::from(scale)) as u32;
                let r = div_pow10_away(i128::from(value), n);
                let exact = pow10(n).is_some_and(|d| i128::from(value) % d == 0) || value == 0;
                (
                    Amount::Int {
                        value: r as i64,
                        scale: target,
                    },
                    exact,
                )
            }
            Amount::Dec { unscaled, scale } => {
                if scale > target {
                    // inf.Dec.Round also rescales upwards; keep the value when that cannot be represented.
                    let n = (i64::from(scale) - i64::from(target)) as u32;
                    return match pow10(n).and_then(|d| unscaled.checked_mul(d)) {
                        Some(u) => (
                            Amount::Dec {
                                unscaled: u,
                                scale: target,
                            },
                            true,
                        ),
                        None => (self, true),
                    };
                }
                let n = (i64::from(target) - i64::from(scale)) as u32;
                let r = div_pow10_away(unscaled, n);
                let exact = unscaled == 0 || pow10(n).is_some_and(|d| unscaled % d == 0);
                (
                    Amount::Dec {
                        unscaled: r,
                        scale: target,
                    },
                    exact,
                )
            }
        }
    }

    /// `AsCanonicalBytes`: digits (with sign) and an exponent that is a multiple of 3.
    fn canonical_base10(self) -> (String, i64) {
        let (unscaled, scale) = self.as_dec();
        let (digits, mut exp) = normalized(unscaled, scale);
        let mut zeros = 0;
        // Go's `%` truncates toward zero, so the exponent moves down to a multiple of 3 on both sides.
        while exp % 3 != 0 {
            zeros += 1;
            exp -= 1;
        }
        let sign = if unscaled < 0 { "-" } else { "" };
        (format!("{sign}{digits}{}", "0".repeat(zeros)), exp)
    }

    /// The integer value of an amount with no fraction, when it fits `i128`.
    fn integer(self) -> Option<i128> {
        let (unscaled, scale) = self.as_dec();
        if scale >= 0 {
            unscaled.checked_mul(pow10(scale as u32)?)
        } else {
            pow10(scale.unsigned_abs()).map(|d| unscaled / d)
        }
    }
}

/// `quantitySuffixer.interpret`: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    let binary = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            // strconv.ParseInt(s[1:], 10, 64), then a truncating int32 conversion.
            let e: i64 = s[1..].parse().ok()?;
            Some((10, e as i32, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// The pieces `parseQuantityString` cuts a text into.
struct Parts<'a> {
    positive: bool,
    /// Sign, numerator and fraction as written: what `inf.Dec.SetString` reads.
    value: &'a str,
    /// Numerator without leading zeros (`"0"` when none are left).
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
    let zero = |positive| Parts {
        positive,
        value: "0",
        num: "0",
        denom: "",
        suffix: "",
    };
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(zero(positive));
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[num_start..pos];
    if pos >= end {
        return Ok(Parts {
            positive,
            value: s,
            num,
            denom: "",
            suffix: "",
        });
    }
    if num.is_empty() {
        num = "0";
    }
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
        return Err(QuantityError::FormatWrong);
    }
    Ok(Parts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// `inf.Dec.SetString` on the numeric part: the unscaled digits and the number of fraction digits.
fn parse_decimal(value: &str, whole: &str) -> Result<(i128, u32), QuantityError> {
    let (negative, digits) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    let mut unscaled: i128 = 0;
    let mut frac: Option<u32> = None;
    let mut any_digit = false;
    for c in digits.bytes() {
        match c {
            b'.' if frac.is_none() => frac = Some(0),
            b'0'..=b'9' => {
                any_digit = true;
                unscaled = unscaled
                    .checked_mul(10)
                    .and_then(|u| u.checked_add(i128::from(c - b'0')))
                    .ok_or_else(|| QuantityError::TooPrecise(whole.to_owned()))?;
                if let Some(f) = frac.as_mut() {
                    *f += 1;
                }
            }
            _ => return Err(QuantityError::Numeric),
        }
    }
    if !any_digit {
        return Err(QuantityError::Numeric);
    }
    Ok((
        if negative { -unscaled } else { unscaled },
        frac.unwrap_or(0),
    ))
}

impl Quantity {
    /// Parses a quantity exactly as `resource.ParseQuantity` does (no surrounding whitespace allowed).
    ///
    /// # Errors
    /// [`QuantityError`] with apimachinery's message when the text is not a quantity.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        if s == "0" {
            return Ok(Quantity {
                amount: Amount::Int { value: 0, scale: 0 },
                format: Format::DecimalSI,
                text: Some(s.to_owned()),
            });
        }
        let p = split(s)?;
        let (base, exponent, mut format) = interpret(p.suffix).ok_or(QuantityError::Suffix)?;
        let digits = (p.num.len() + p.denom.len()) as i64;
        let (precision, mut scale, mantissa) = match format {
            Format::DecimalExponent | Format::DecimalSI => {
                (MAX_INT64_FACTORS - digits, exponent, 1i64)
            }
            Format::BinarySI if p.denom.is_empty() => {
                // 1Mi (2^20) has ~6 digits of decimal precision: exponent*3/10 - 1.
                (
                    15 - p.num.len() as i64 - i64::from(exponent) * 3 / 10 - 1,
                    0,
                    1i64 << exponent,
                )
            }
            Format::BinarySI => (-1, 0, 1),
        };
        if precision >= 0 {
            scale = scale.wrapping_sub(p.denom.len() as i32);
            if scale >= NANO {
                let shifted = format!("{}{}", p.num, p.denom);
                let value: i64 = shifted.parse().map_err(|_| QuantityError::Numeric)?;
                if let Some(result) = value.checked_mul(mantissa) {
                    let result = if p.positive {
                        result
                    } else {
                        result.wrapping_neg()
                    };
                    let keep_text = match format {
                        Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                        _ => {
                            scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
                        }
                    };
                    return Ok(Quantity {
                        amount: Amount::Int {
                            value: result,
                            scale,
                        },
                        format,
                        text: keep_text.then(|| s.to_owned()),
                    });
                }
            }
        }

        let (unscaled, frac) = parse_decimal(p.value, s)?;
        let too_precise = || QuantityError::TooPrecise(s.to_owned());
        let (mut abs, mut scale) = if base == 10 {
            (
                unscaled.unsigned_abs() as i128,
                (frac as i32).wrapping_neg().wrapping_add(exponent),
            )
        } else {
            let m = 1i128 << exponent;
            match unscaled
                .unsigned_abs()
                .checked_mul(m as u128)
                .and_then(|v| i128::try_from(v).ok())
            {
                Some(v) => (v, (frac as i32).wrapping_neg()),
                None => return Err(too_precise()),
            }
        };
        if abs != 0 {
            // Round a non-zero value up to the nano scale (inf.RoundUp on the magnitude).
            if scale < NANO {
                abs = div_pow10_away(abs, (NANO - scale) as u32);
                scale = NANO;
            } else if let Some(v) = pow10((scale - NANO) as u32).and_then(|d| abs.checked_mul(d)) {
                abs = v;
                scale = NANO;
            }
        }
        let magnitude = Amount::Dec {
            unscaled: abs,
            scale,
        };
        if format == Format::BinarySI
            && magnitude.cmp(Amount::Int {
                value: i64::MAX,
                scale: 0,
            }) == Ordering::Greater
        {
            abs = MAX_ALLOWED;
            scale = 0;
        }
        let magnitude = Amount::Dec {
            unscaled: abs,
            scale,
        };
        if format == Format::BinarySI
            && abs != 0
            && magnitude.cmp(Amount::Int { value: 1, scale: 0 }) == Ordering::Less
        {
            format = Format::DecimalSI;
        }
        let unscaled = if unscaled < 0 { -abs } else { abs };
        Ok(Quantity {
            amount: Amount::Dec { unscaled, scale },
            format,
            text: None,
        })
    }

    /// Reads a quantity from JSON the way `Quantity.UnmarshalJSON` does: a string (trimmed) or a number;
    /// `null` is a zero quantity.
    ///
    /// # Errors
    /// [`QuantityError`] when the text is not a quantity (any other JSON type is [`QuantityError::FormatWrong`]).
    pub fn from_json(value: &Value) -> Result<Quantity, QuantityError> {
        match value {
            Value::Null => Ok(Quantity::from_value(0, Format::DecimalSI)),
            Value::String(s) => Quantity::parse(s.trim()),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => Err(QuantityError::FormatWrong),
        }
    }

    /// `NewQuantity(value, format)`.
    pub fn from_value(value: i64, format: Format) -> Quantity {
        Quantity {
            amount: Amount::Int { value, scale: 0 },
            format,
            text: None,
        }
    }

    /// `NewMilliQuantity(milli, format)`: `milli / 1000`.
    pub fn from_milli(milli: i64, format: Format) -> Quantity {
        Quantity {
            amount: Amount::Int {
                value: milli,
                scale: -3,
            },
            format,
            text: None,
        }
    }

    /// `NewScaledQuantity(value, scale)`: `value × 10^scale`, DecimalSI.
    pub fn from_scaled(value: i64, scale: i32) -> Quantity {
        Quantity {
            amount: Amount::Int { value, scale },
            format: Format::DecimalSI,
            text: None,
        }
    }

    /// The format the quantity prints in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.amount.signum() == 0
    }

    /// -1, 0 or 1 (`Quantity.Sign`).
    pub fn sign(&self) -> i32 {
        self.amount.signum()
    }

    /// `MilliValue`: `ceil(q × 1000)` as Go computes it, overflow and rounding quirks included.
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// `Value`: the value rounded to an integer as Go does.
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// `ScaledValue(scale)`: the value in units of 10^scale, rounded up.
    pub fn scaled_value(&self, target: i32) -> i64 {
        match self.amount {
            Amount::Int { value, scale } => {
                // int64Amount.AsScaledInt64: away from zero when scaling down, 0 on overflow when scaling up.
                if scale < target {
                    let n = (i64::from(target) - i64::from(scale)) as u32;
                    div_pow10_away(i128::from(value), n) as i64
                } else {
                    int_scale_up(value, i64::from(scale) - i64::from(target)).unwrap_or(0)
                }
            }
            Amount::Dec { unscaled, scale } => {
                // scaledValue(unscaled, infScale, newInfScale): dif = scale - newScale in inf's orientation.
                let dif = i64::from(target) - i64::from(scale);
                let low = unscaled as i64;
                if dif == 0 {
                    low
                } else if dif < 0 {
                    // int64(math.Pow10(n)): out of range above 10^18, which amd64 turns into MinInt64.
                    let factor = if -dif <= 18 {
                        10i64.pow((-dif) as u32)
                    } else {
                        i64::MIN
                    };
                    low.wrapping_mul(factor)
                } else if unscaled < i128::from(i64::MAX) && dif < 19 {
                    let d = 10i64.pow(dif as u32);
                    let (q, r) = (low.wrapping_div(d), low.wrapping_rem(d));
                    if r != 0 { q.wrapping_add(1) } else { q }
                } else {
                    match pow10(dif as u32) {
                        Some(d) => {
                            let q = unscaled.div_euclid(d) as i64;
                            if unscaled.rem_euclid(d) != 0 {
                                q.wrapping_add(1)
                            } else {
                                q
                            }
                        }
                        // 10^dif exceeds every mantissa: the Euclidean quotient is 0 or -1, remainder non-zero.
                        None => i64::from(unscaled > 0),
                    }
                }
            }
        }
    }

    /// `SetMilli`: the value becomes `milli / 1000`; the format is kept.
    pub fn set_milli(&mut self, milli: i64) {
        self.text = None;
        self.amount = Amount::Int {
            value: milli,
            scale: -3,
        };
    }

    /// `Add`: exact sum. A zero receiver takes `other`'s format.
    pub fn add(&mut self, other: &Quantity) {
        self.text = None;
        if let (
            Amount::Int {
                value: a,
                scale: sa,
            },
            Amount::Int {
                value: b,
                scale: sb,
            },
        ) = (self.amount, other.amount)
        {
            if a == 0 {
                self.format = other.format;
            }
            let sum = if b == 0 {
                Some(self.amount)
            } else if a == 0 {
                Some(other.amount)
            } else if sa == sb {
                a.checked_add(b).map(|v| Amount::Int {
                    value: v,
                    scale: sa,
                })
            } else if sa > sb {
                int_scale_up(a, i64::from(sa) - i64::from(sb))
                    .and_then(|c| c.checked_add(b))
                    .map(|v| Amount::Int {
                        value: v,
                        scale: sb,
                    })
            } else {
                int_scale_up(b, i64::from(sb) - i64::from(sa))
                    .and_then(|c| a.checked_add(c))
                    .map(|v| Amount::Int {
                        value: v,
                        scale: sa,
                    })
            };
            if let Some(sum) = sum {
                self.amount = sum;
                return;
            }
        } else if self.is_zero() {
            self.format = other.format;
        }
        self.amount = dec_add(self.amount.as_dec(), other.amount.as_dec());
    }

    /// `Sub`: exact difference. A zero receiver takes `other`'s format.
    pub fn sub(&mut self, other: &Quantity) {
        let mut negated = other.clone();
        negated.neg();
        self.add(&negated);
    }

    /// `Neg`: the value changes sign.
    pub fn neg(&mut self) {
        self.text = None;
        self.amount = match self.amount {
            Amount::Int { value, scale } => Amount::Int {
                value: value.wrapping_neg(),
                scale,
            },
            Amount::Dec { unscaled, scale } => Amount::Dec {
                unscaled: -unscaled,
                scale,
            },
        };
    }

    /// `RoundUp(scale)`: rounds away from zero to at least `scale` (a power of ten); `true` when nothing was
    /// lost. An int64 amount that is already coarse enough keeps its remembered text.
    pub fn round_up(&mut self, scale: i32) -> bool {
        if let Amount::Int { scale: s, .. } = self.amount
            && s >= scale
        {
            return true;
        }
        self.text = None;
        let (amount, exact) = self.amount.as_scale(scale);
        self.amount = amount;
        exact
    }

    /// `RoundUp(Milli)`: what API defaulting (`SetDefaults_ResourceList`) does to container resources.
    pub fn round_up_to_milli(&mut self) -> bool {
        self.round_up(-3)
    }

    /// The canonical form (`CanonicalizeBytes`), ignoring any remembered input text.
    pub fn canonical(&self) -> String {
        if self.is_zero() {
            return "0".to_owned();
        }
        let mut format = self.format;
        let mut rounded = None;
        if format == Format::BinarySI {
            let small = self.amount.cmp(Amount::Int {
                value: -1024,
                scale: 0,
            }) == Ordering::Greater
                && self.amount.cmp(Amount::Int {
                    value: 1024,
                    scale: 0,
                }) == Ordering::Less;
            if small {
                format = Format::DecimalSI;
            } else {
                let (r, exact) = self.amount.as_scale(0);
                match r.integer() {
                    Some(v) if exact => rounded = Some(v),
                    _ => format = Format::DecimalSI,
                }
            }
        }
        match (format, rounded) {
            (Format::BinarySI, Some(v)) => {
                let mut m = v.unsigned_abs();
                let mut times = 0;
                while m >= 1024 && m % 1024 == 0 {
                    m /= 1024;
                    times += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                    .get(times)
                    .copied()
                    .unwrap_or("");
                format!("{}{m}{suffix}", if v < 0 { "-" } else { "" })
            }
            _ => {
                let (number, exp) = self.amount.canonical_base10();
                let suffix = if format == Format::DecimalExponent {
                    if exp == 0 {
                        String::new()
                    } else {
                        format!("e{}", exp as i32)
                    }
                } else {
                    let s = match exp {
                        -9 => "n",
                        -6 => "u",
                        -3 => "m",
                        3 => "k",
                        6 => "M",
                        9 => "G",
                        12 => "T",
                        15 => "P",
                        18 => "E",
                        // Released apimachinery has no suffix for any other exponent and drops it.
                        _ => "",
                    };
                    s.to_owned()
                };
                number + &suffix
            }
        }
    }
}

/// `inf.Dec.Add`: exact, aligned on the finer scale. Only when that alignment does not fit 128 bits (beyond
/// 38 significant digits) is the finer operand rounded away from zero at a coarser scale.
fn dec_add((a, sa): (i128, i32), (b, sb): (i128, i32)) -> Amount {
    let (coarse, coarse_scale) = if sa >= sb {
        (a, i64::from(sa))
    } else {
        (b, i64::from(sb))
    };
    let mut target = i64::from(sa.min(sb));
    let fit = |u: i128, s: i32, target: i64| -> Option<i128> {
        let s = i64::from(s);
        if s >= target {
            pow10(u32::try_from(s - target).ok()?).and_then(|d| u.checked_mul(d))
        } else {
            Some(div_pow10_away(
                u,
                u32::try_from(target - s).unwrap_or(u32::MAX),
            ))
        }
    };
    loop {
        if let (Some(x), Some(y)) = (fit(a, sa, target), fit(b, sb, target))
            && let Some(unscaled) = x.checked_add(y)
        {
            return Amount::Dec {
                unscaled,
                scale: target as i32,
            };
        }
        // Move to the finest scale at which the coarser operand still fits, then one digit at a time.
        let digits = coarse.unsigned_abs().to_string().len() as i64;
        target = (target + 1).max(coarse_scale - (37 - digits));
    }
}

impl fmt::Display for Quantity {
    /// `Quantity.String()`: the remembered input text when Go keeps it, else the canonical form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.text {
            Some(t) => f.write_str(t),
            None => f.write_str(&self.canonical()),
        }
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl PartialEq for Quantity {
    /// `Quantity.Equal`: the values are equal, whatever the format.
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    /// `Quantity.Cmp`: by value.
    fn cmp(&self, other: &Self) -> Ordering {
        self.amount.cmp(other.amount)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Quantity::from_json(&v).map_err(serde::de::Error::custom)
    }
}

/// The canonical text of a quantity written as `text` (`Quantity.String()`).
///
/// # Errors
/// [`QuantityError`] when the text is not a quantity.
pub fn canonical(text: &str) -> Result<String, QuantityError> {
    Ok(Quantity::parse(text.trim())?.to_string())
}

/// The canonical text after rounding up to milli units, as API defaulting does to container resources
/// (`SetDefaults_ResourceList`).
///
/// # Errors
/// [`QuantityError`] when the text is not a quantity.
pub fn canonical_milli(text: &str) -> Result<String, QuantityError> {
    let mut q = Quantity::parse(text.trim())?;
    q.round_up_to_milli();
    Ok(q.to_string())
}

#[cfg(test)]
mod tests;
