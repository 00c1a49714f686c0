//! Vectors from apimachinery's `quantity_test.go` (TestQuantityParse, TestQuantityString, TestQuantityParseEmit,
//! TestQuantityRoundUp, TestMilliNewSet, TestNewSet, TestNewScaledSet, TestScaledValue, TestQuantityCmp, TestAdd,
//! TestSub) and hand-checked cases for the quirks this crate relies on. Expected texts are written by hand.

use super::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// `decQuantity(i, exponent, format)` of the Go tests.
fn dec(i: i64, exponent: i32) -> Quantity {
    Quantity::from_scaled(i, exponent)
}

#[test]
fn parses_to_the_expected_value_and_format() {
    use Format::*;
    let table: &[(&str, Quantity, Format)] = &[
        ("0", dec(0, 0), DecimalSI),
        ("0n", dec(0, 0), DecimalSI),
        ("0u", dec(0, 0), DecimalSI),
        ("0m", dec(0, 0), DecimalSI),
        ("0Ki", dec(0, 0), BinarySI),
        ("0k", dec(0, 0), DecimalSI),
        ("0Mi", dec(0, 0), BinarySI),
        ("0M", dec(0, 0), DecimalSI),
        ("0Gi", dec(0, 0), BinarySI),
        ("0G", dec(0, 0), DecimalSI),
        ("0Ti", dec(0, 0), BinarySI),
        ("0T", dec(0, 0), DecimalSI),
        ("1", dec(1, 0), DecimalSI),
        ("1Ki", dec(1024, 0), BinarySI),
        ("8Ki", dec(8 * 1024, 0), BinarySI),
        ("7Mi", dec(7 * 1024 * 1024, 0), BinarySI),
        ("6Gi", dec(6 * 1024 * 1024 * 1024, 0), BinarySI),
        ("5Ti", dec(5 << 40, 0), BinarySI),
        ("4Pi", dec(4 << 50, 0), BinarySI),
        ("3Ei", dec(3 << 60, 0), BinarySI),
        ("10Ti", dec(10 << 40, 0), BinarySI),
        ("100Ti", dec(100 << 40, 0), BinarySI),
        ("5n", dec(5, -9), DecimalSI),
        ("4u", dec(4, -6), DecimalSI),
        ("3m", dec(3, -3), DecimalSI),
        ("9", dec(9, 0), DecimalSI),
        ("8k", dec(8, 3), DecimalSI),
        ("50k", dec(5, 4), DecimalSI),
        ("7M", dec(7, 6), DecimalSI),
        ("6G", dec(6, 9), DecimalSI),
        ("5T", dec(5, 12), DecimalSI),
        ("40T", dec(4, 13), DecimalSI),
        ("300T", dec(3, 14), DecimalSI),
        ("2P", dec(2, 15), DecimalSI),
        ("1E", dec(1, 18), DecimalSI),
        ("1E-3", dec(1, -3), DecimalExponent),
        ("1e3", dec(1, 3), DecimalExponent),
        ("1E6", dec(1, 6), DecimalExponent),
        ("1e9", dec(1, 9), DecimalExponent),
        ("1E12", dec(1, 12), DecimalExponent),
        ("1e15", dec(1, 15), DecimalExponent),
        ("1E18", dec(1, 18), DecimalExponent),
        ("1e14", dec(1, 14), DecimalExponent),
        ("1e13", dec(1, 13), DecimalExponent),
        ("100.035k", dec(100035, 0), DecimalSI),
        ("0.001", dec(1, -3), DecimalSI),
        ("0.0005k", dec(5, -1), DecimalSI),
        ("0.005", dec(5, -3), DecimalSI),
        ("0.05", dec(5, -2), DecimalSI),
        ("0.5", dec(5, -1), DecimalSI),
        ("0.00050k", dec(5, -1), DecimalSI),
        ("0.00500", dec(5, -3), DecimalSI),
        ("0.05000", dec(5, -2), DecimalSI),
        ("0.50000", dec(5, -1), DecimalSI),
        ("0.5e0", dec(5, -1), DecimalExponent),
        ("0.5e-1", dec(5, -2), DecimalExponent),
        ("0.5e-2", dec(5, -3), DecimalExponent),
        ("10.035M", dec(10035, 3), DecimalSI),
        ("1.2e3", dec(12, 2), DecimalExponent),
        ("1.3E+6", dec(13, 5), DecimalExponent),
        ("1.40e9", dec(14, 8), DecimalExponent),
        ("1.53E12", dec(153, 10), DecimalExponent),
        ("1.6e15", dec(16, 14), DecimalExponent),
        ("1.7E18", dec(17, 17), DecimalExponent),
        ("9.01", dec(901, -2), DecimalSI),
        ("8.1k", dec(81, 2), DecimalSI),
        ("7.123456M", dec(7123456, 0), DecimalSI),
        ("6.987654321G", dec(6987654321, 0), DecimalSI),
        ("5.444T", dec(5444, 9), DecimalSI),
        ("40.1T", dec(401, 11), DecimalSI),
        ("300.2T", dec(3002, 11), DecimalSI),
        ("2.5P", dec(25, 14), DecimalSI),
        ("1.01E", dec(101, 16), DecimalSI),
        // Saturate / round up to nano.
        ("3.001n", dec(4, -9), DecimalSI),
        ("1.1E-9", dec(2, -9), DecimalExponent),
        ("0.0000000001", dec(1, -9), DecimalSI),
        ("0.0000000005", dec(1, -9), DecimalSI),
        ("0.00000000050", dec(1, -9), DecimalSI),
        ("0.5e-9", dec(1, -9), DecimalExponent),
        ("0.9n", dec(1, -9), DecimalSI),
        ("0.00000012345", dec(124, -9), DecimalSI),
        ("0.00000012354", dec(124, -9), DecimalSI),
        ("9Ei", dec(i64::MAX, 0), BinarySI),
        ("9223372036854775807Ki", dec(i64::MAX, 0), BinarySI),
        ("12E", dec(12, 18), DecimalSI),
        // Fractional binary.
        ("100.035Ki", dec(10243584, -2), BinarySI),
        ("0.5Mi", dec(512 * 1024, 0), BinarySI),
        ("0.05Gi", dec(536870912, -1), BinarySI),
        ("0.025Ti", dec(274877906944, -1), BinarySI),
        // "Things written by trolls".
        ("0.000000000001Ki", dec(2, -9), DecimalSI),
        (".001", dec(1, -3), DecimalSI),
        (".0001k", dec(100, -3), DecimalSI),
        ("1.", dec(1, 0), DecimalSI),
        ("1.G", dec(1, 9), DecimalSI),
    ];
    for (input, value, format) in table {
        let got = q(input);
        assert_eq!(&got, value, "{input}: value");
        assert_eq!(got.format(), *format, "{input}: format");

        let mut negated = value.clone();
        negated.neg();
        let got = q(&format!("-{input}"));
        assert_eq!(got, negated, "-{input}: value");
        assert_eq!(got.format(), *format, "-{input}: format");

        let got = q(&format!("+{input}"));
        assert_eq!(&got, value, "+{input}: value");
        assert_eq!(got.format(), *format, "+{input}: format");
    }
}

#[test]
fn rejects_what_apimachinery_rejects_with_its_messages() {
    for s in [
        "1.1.M",
        "1+1.0M",
        "0.1am",
        "aoeu",
        " 1",
        "1 ",
        "Non-Numeric",
        "1e3k",
    ] {
        assert_eq!(Quantity::parse(s), Err(QuantityError::FormatWrong), "{s}");
    }
    for s in [
        "0.1mi", ".5i", "1i", "-3.01i", "-3.01e-", "1e", "1ki", "1m5", "5Ei3",
    ] {
        assert_eq!(Quantity::parse(s), Err(QuantityError::Suffix), "{s}");
    }
    assert_eq!(Quantity::parse(""), Err(QuantityError::FormatWrong));
    assert_eq!(Quantity::parse(".e-10"), Err(QuantityError::Numeric));
    assert_eq!(
        QuantityError::FormatWrong.to_string(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        QuantityError::Suffix.to_string(),
        "unable to parse quantity's suffix"
    );
    assert_eq!(
        QuantityError::Numeric.to_string(),
        "unable to parse numeric part of quantity"
    );
}

#[test]
fn odd_but_valid_texts_parse_like_go() {
    // A lone sign or dot is zero; a suffix without digits is zero.
    for s in ["+", "-", ".", "-.", "e3", "Ki", ".m", "00"] {
        assert!(q(s).is_zero(), "{s}");
    }
    assert_eq!(q("00").to_string(), "0");
    assert_eq!(q("e3").format(), Format::DecimalExponent);
}

#[test]
fn prints_the_canonical_form() {
    use Format::*;
    let table: &[(Quantity, &str)] = &[
        (Quantity::from_value(1024 * 1024 * 1024, BinarySI), "1Gi"),
        (Quantity::from_value(300 * 1024 * 1024, BinarySI), "300Mi"),
        (Quantity::from_value(6 * 1024, BinarySI), "6Ki"),
        (
            Quantity::from_value(1001 * 1024 * 1024 * 1024, BinarySI),
            "1001Gi",
        ),
        (Quantity::from_value(1 << 40, BinarySI), "1Ti"),
        (Quantity::from_value(5, BinarySI), "5"),
        (Quantity::from_milli(500, BinarySI), "500m"),
        (dec(1, 9), "1G"),
        (dec(1000, 6), "1G"),
        (dec(1000000, 3), "1G"),
        (dec(1000000000, 0), "1G"),
        (dec(1, -3), "1m"),
        (dec(80, -3), "80m"),
        (dec(1080, -3), "1080m"),
        (dec(108, -2), "1080m"),
        (dec(10800, -4), "1080m"),
        (dec(300, 6), "300M"),
        (dec(1, 12), "1T"),
        (dec(1, 18), "1E"),
        (dec(1234567, 6), "1234567M"),
        (Quantity::from_milli(1234567, BinarySI), "1234567m"),
        (dec(3, 3), "3k"),
        (Quantity::from_value(1025, BinarySI), "1025"),
        (dec(0, 0), "0"),
        (Quantity::from_value(0, BinarySI), "0"),
        (Quantity::from_scaled(0, 0), "0"),
        (dec(1, -9), "1n"),
        (dec(80, -9), "80n"),
        (dec(1080, -9), "1080n"),
        (dec(108, -8), "1080n"),
        (dec(1, -6), "1u"),
        (dec(80, -6), "80u"),
        (dec(1080, -6), "1080u"),
    ];
    for (value, text) in table {
        assert_eq!(value.to_string(), *text, "{value:?}");
        if !value.is_zero() {
            let mut negated = value.clone();
            negated.neg();
            assert_eq!(negated.to_string(), format!("-{text}"), "{value:?}");
        }
        // A canonical text is remembered as-is on parse.
        assert_eq!(q(text).text.as_deref(), Some(*text), "{text}");
    }
}

#[test]
fn decimal_exponent_quantities_print_with_an_exponent() {
    let table = [
        ("1e9", "1e9"),
        (".001e12", "1e9"),
        ("1e-3", "1e-3"),
        ("0.001e0", "1e-3"),
        ("1e-9", "1e-9"),
        ("1000e-12", "1e-9"),
        ("80e-3", "80e-3"),
        ("300e6", "300e6"),
        ("1e12", "1e12"),
        ("1e3", "1e3"),
        ("3e3", "3e3"),
        ("12e6", "12e6"),
        ("1.5e3", "1500"),
        ("1e4", "10e3"),
        ("0.5e-9", "1e-9"),
    ];
    for (input, text) in table {
        assert_eq!(q(input).to_string(), text, "{input}");
    }
}

#[test]
fn non_canonical_texts_print_canonically() {
    let table = [
        ("1024Mi", "1Gi"),
        ("307200Ki", "300Mi"),
        ("1025024Mi", "1001Gi"),
        ("5000m", "5"),
        ("0.5", "500m"),
        ("1000M", "1G"),
        ("0.001T", "1G"),
        ("1000u", "1m"),
        ("1.08", "1080m"),
        ("1080000000n", "1080m"),
        ("1.5Gi", "1536Mi"),
        ("0.1", "100m"),
        ("2000m", "2"),
        ("1.5", "1500m"),
        ("1000Mi", "1000Mi"),
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("0.5Gi", "512Mi"),
        ("1.1Ki", "1126400m"),
        ("1e3", "1e3"),
        ("1k", "1k"),
        ("100m", "100m"),
        ("1", "1"),
        ("9Ei", "9223372036854775807"),
    ];
    for (input, text) in table {
        assert_eq!(q(input).to_string(), text, "{input}");
        if text != "0" {
            assert_eq!(
                q(&format!("-{input}")).to_string(),
                format!("-{text}"),
                "-{input}"
            );
        }
    }
}

#[test]
fn decimal_si_beyond_exa_drops_the_exponent_like_released_apimachinery() {
    // No DecimalSI suffix exists for 10^21; apimachinery before the 2026 fix writes the bare mantissa.
    assert_eq!(q("1000E").to_string(), "1");
    assert_eq!(q("1000E"), dec(1, 21));
    assert_eq!(dec(5, 21).to_string(), "5");
    // DecimalExponent has no such gap.
    assert_eq!(q("1e21").to_string(), "1e21");
    assert_eq!(q("10e20").to_string(), "1e21");
}

#[test]
fn remembered_text_is_printed_verbatim_until_the_value_changes() {
    // Go reuses the input when the fast path finds it canonical, sign and leading zeros included.
    assert_eq!(q("+100m").to_string(), "+100m");
    assert_eq!(q("0100m").to_string(), "0100m");
    assert_eq!(q("1E3").to_string(), "1E3");
    assert_eq!(q("+1Ki").to_string(), "+1Ki");
    assert_eq!(q("1025Ki").to_string(), "1025Ki");
    assert_eq!(q("8Ki").text, None);
    let mut v = q("+100m");
    assert_eq!(v.canonical(), "100m");
    v.add(&q("0"));
    assert_eq!(v.to_string(), "100m");
    let mut v = q("+100m");
    v.neg();
    assert_eq!(v.to_string(), "-100m");
}

#[test]
fn round_up_matches_go() {
    let table: &[(&str, i32, Quantity, bool)] = &[
        ("9.01", -3, dec(901, -2), true),
        ("9.01", -2, dec(901, -2), true),
        ("9.01", -1, dec(91, -1), false),
        ("9.01", 0, dec(10, 0), false),
        ("9.01", 1, dec(10, 0), false),
        ("9.01", 2, dec(100, 0), false),
        ("-9.01", -3, dec(-901, -2), true),
        ("-9.01", -2, dec(-901, -2), true),
        ("-9.01", -1, dec(-91, -1), false),
        ("-9.01", 0, dec(-10, 0), false),
        ("-9.01", 1, dec(-10, 0), false),
        ("-9.01", 2, dec(-100, 0), false),
    ];
    for (input, scale, want, exact) in table {
        let mut got = q(input);
        assert_eq!(got.round_up(*scale), *exact, "{input} {scale}");
        assert_eq!(&got, want, "{input} {scale}");
    }
}

#[test]
fn round_up_to_milli_is_api_defaulting() {
    let mut v = q("1.0001");
    assert!(!v.round_up_to_milli());
    assert_eq!(v.to_string(), "1001m");
    let mut v = q("100u");
    v.round_up_to_milli();
    assert_eq!(v.to_string(), "1m");
    // Already at milli scale or coarser: the remembered text survives.
    let mut v = q("+250m");
    assert!(v.round_up_to_milli());
    assert_eq!(v.to_string(), "+250m");
    // A decimal-path value always loses it.
    let mut v = q("1.5Gi");
    assert!(v.round_up_to_milli());
    assert_eq!(v.to_string(), "1536Mi");
    let mut v = q("0.0000000001");
    v.round_up_to_milli();
    assert_eq!(v.to_string(), "1m");
}

#[test]
fn milli_and_plain_constructors_print_like_go() {
    use Format::*;
    let milli = [
        (1, DecimalSI, "1m"),
        (1000, DecimalSI, "1"),
        (1234000, DecimalSI, "1234"),
        (1024, BinarySI, "1024m"),
        (1024 * 1024, BinarySI, "1048576m"),
    ];
    for (value, format, text) in milli {
        assert_eq!(Quantity::from_milli(value, format).to_string(), text);
        let mut set = Quantity::from_value(0, format);
        set.set_milli(value);
        assert_eq!(set.to_string(), text);
        assert_eq!(q(text).milli_value(), value, "{text}");
    }
    let plain = [
        (1, DecimalSI, "1"),
        (1000, DecimalSI, "1k"),
        (1234000, DecimalSI, "1234k"),
        (1024, BinarySI, "1Ki"),
        (1024 * 1024, BinarySI, "1Mi"),
    ];
    for (value, format, text) in plain {
        assert_eq!(Quantity::from_value(value, format).to_string(), text);
        assert_eq!(q(text).value(), value, "{text}");
    }
    let scaled = [
        (1, -9, "1n"),
        (1000, -9, "1u"),
        (1, -6, "1u"),
        (1000, -6, "1m"),
        (1, -3, "1m"),
        (1000, -3, "1"),
        (1, 0, "1"),
        (0, -9, "0"),
        (0, -3, "0"),
    ];
    for (value, scale, text) in scaled {
        assert_eq!(Quantity::from_scaled(value, scale).to_string(), text);
        assert_eq!(q(text).scaled_value(scale), value, "{text}");
    }
}

#[test]
fn scaled_value_rounds_up() {
    let table = [
        (-9, -9, 1),
        (-9, -6, 1),
        (-9, -3, 1),
        (-9, 0, 1),
        (-6, -9, 1000),
        (-6, -6, 1),
        (-6, -3, 1),
        (-6, 0, 1),
        (-3, -9, 1_000_000),
        (-3, -6, 1000),
        (-3, -3, 1),
        (-3, 0, 1),
        (0, -9, 1_000_000_000),
        (0, -6, 1_000_000),
        (0, -3, 1000),
        (0, 0, 1),
        (2, -2, 10_000),
    ];
    for (from, to, want) in table {
        assert_eq!(
            Quantity::from_scaled(1, from).scaled_value(to),
            want,
            "{from} -> {to}"
        );
    }
}

#[test]
fn milli_value_rounding_and_overflow_follow_the_representation() {
    // int64 amounts round away from zero.
    assert_eq!(q("1.5m").milli_value(), 2);
    assert_eq!(q("-1.5m").milli_value(), -2);
    assert_eq!(q("0.1m").milli_value(), 1);
    // Decimal amounts: ceil for positive values, truncate-then-add-one for negative ones (scaledValue).
    assert_eq!(q("0.0000000015").milli_value(), 1);
    // -2n in the decimal form: Go's -2/10^6 truncates to 0, and the remainder adds 1.
    assert_eq!(q("-0.0000000015").milli_value(), 1);
    assert_eq!(q("-1.5Ki").milli_value(), -1_536_000);
    // int64 overflow yields 0 (positiveScaleInt64 gives up).
    assert_eq!(q("10P").milli_value(), 0);
    assert_eq!(q("9P").milli_value(), 9_000_000_000_000_000_000_i128 as i64);
    assert_eq!(q("1Gi").milli_value(), 1_073_741_824_000);
}

#[test]
fn compares_by_value() {
    assert_eq!(q("0").cmp(&q("0")), Ordering::Equal);
    assert_eq!(q("100m").cmp(&q("50m")), Ordering::Greater);
    assert_eq!(q("50m").cmp(&q("100m")), Ordering::Less);
    assert_eq!(q("10000T").cmp(&q("100Gi")), Ordering::Greater);
    assert_eq!(q("1Gi"), q("1073741824"));
    assert_eq!(q("1k"), q("1e3"));
    assert!(q("999m") < q("1"));
    assert!(q("-1") < q("1m"));
    assert!(q("-2") < q("-1"));
    assert_eq!(
        Quantity::from_scaled(901, -2).cmp(&Quantity::from_scaled(900, -2)),
        Ordering::Greater
    );
    assert_eq!(
        Quantity::from_scaled(0, 1).cmp(&Quantity::from_scaled(0, -1)),
        Ordering::Equal
    );
    assert_eq!(
        Quantity::from_scaled(800, -3).cmp(&Quantity::from_scaled(79, -2)),
        Ordering::Greater
    );
    assert_eq!(
        Quantity::from_scaled(i64::MAX, -16).cmp(&Quantity::from_scaled(1, 3)),
        Ordering::Less
    );
    assert_eq!(
        Quantity::from_scaled(i64::MIN, -19).cmp(&Quantity::from_scaled(-1, 0)),
        Ordering::Greater
    );
    assert_eq!(
        Quantity::from_scaled(1_000_000_000_000_000_001, -17).cmp(&Quantity::from_scaled(1, 1)),
        Ordering::Greater
    );
}

#[test]
fn add_and_sub_are_exact_and_adopt_the_format_of_a_zero_receiver() {
    let mut a = Quantity::from_value(10, Format::DecimalSI);
    a.add(&Quantity::from_scaled(1, 1));
    assert_eq!(a, Quantity::from_value(20, Format::DecimalSI));
    let mut a = Quantity::from_value(10, Format::BinarySI);
    a.add(&Quantity::from_value(1, Format::DecimalSI));
    assert_eq!(
        (a.to_string(), a.format()),
        ("11".to_owned(), Format::BinarySI)
    );
    let mut zero = q("0");
    zero.add(&q("1Gi"));
    assert_eq!(zero.to_string(), "1Gi");
    let mut zero = q("0");
    zero.add(&q("100m"));
    assert_eq!(zero.to_string(), "100m");
    let mut v = q("100m");
    v.sub(&q("0"));
    assert_eq!(v.to_string(), "100m");
    let mut zero = q("0");
    zero.sub(&q("1Gi"));
    assert_eq!(zero.to_string(), "-1Gi");
    let mut v = q("1Gi");
    v.add(&q("512Mi"));
    assert_eq!(v.to_string(), "1536Mi");
    let mut v = q("200m");
    v.add(&q("400m"));
    assert_eq!(v.to_string(), "600m");
    let mut v = q("500m");
    v.add(&q("500m"));
    assert_eq!(v.to_string(), "1");
    // int64 overflow moves to the decimal form and stays exact.
    let mut v = Quantity::from_value(i64::MAX, Format::DecimalSI);
    v.add(&Quantity::from_value(1, Format::DecimalSI));
    assert_eq!(v.to_string(), "9223372036854775808");
    // Mixing the decimal form (1.5Gi) with an int64 amount.
    let mut v = q("1.5Gi");
    v.add(&q("512Mi"));
    assert_eq!(v.to_string(), "2Gi");
    let mut v = q("1m");
    v.add(&q("0.5n"));
    assert_eq!(v.to_string(), "1000001n");
}

#[test]
fn json_round_trip_uses_the_go_string() {
    let v: Quantity =
        serde_json::from_value(serde_json::json!(" 1 ")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.to_string(), "1");
    let v: Quantity =
        serde_json::from_value(serde_json::json!(-1)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.to_string(), "-1");
    assert_eq!(
        serde_json::to_value(q("1.5Gi")).ok(),
        Some(serde_json::json!("1536Mi"))
    );
    assert!(serde_json::from_value::<Quantity>(serde_json::json!("1x")).is_err());
    assert!(Quantity::from_json(&Value::Null).is_ok_and(|v| v.is_zero()));
}

#[test]
fn too_many_digits_are_reported_not_wrapped() {
    let long = format!("1.{}1", "0".repeat(40));
    assert!(matches!(
        Quantity::parse(&long),
        Err(QuantityError::TooPrecise(_))
    ));
}
