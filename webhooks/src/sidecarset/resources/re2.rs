//! Go's `regexp.Compile` for `targetContainersNameRegex` (spec/sidecarset.md §5 step 1 and §8): the pattern is
//! read with Go's `regexp/syntax` rules (RE2, Perl flags) so that the same patterns are accepted and rejected
//! with Go's error text (`error parsing regexp: missing closing ]: `[a``), then rewritten into an equivalent
//! pattern for the `regex` crate, which does the matching.
//!
//! The rewrite spells every construct explicitly, so the two engines' syntax differences do not matter: each
//! literal is `\x{..}`, flags are applied per atom (`(?i:..)`, `(?s:.)`, `(?m:^)`), `\d \s \w \b` and the POSIX
//! classes are Go's ASCII definitions, and `^`/`$` outside `(?m)` are `\A`/`\z`. Groups become non-capturing
//! (only `MatchString` is needed). Greediness is parsed but not kept, as it cannot change whether a match exists.
//!
//! Known differences: `\p{..}` names are Go's general categories, `Any`, and script names checked against the
//! `regex` crate's Unicode tables (written with an upper-case initial, as Go's are), so Unicode-version
//! differences and Go 1.25's extra aliases are not modelled. Go's parse-tree height limit is approximated by a
//! group depth of 1000. A pattern Go accepts but whose compiled form exceeds the `regex` crate's default size
//! limit (10 MiB; `\pL{1000}` does) is reported as `expression too large`, which keeps compilation cheap.

use regex::{Regex, RegexBuilder};

const MISSING_BRACKET: &str = "missing closing ]";
const MISSING_PAREN: &str = "missing closing )";
const UNEXPECTED_PAREN: &str = "unexpected )";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_CHAR_RANGE: &str = "invalid character class range";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const NESTING_DEPTH: &str = "expression nests too deeply";
const LARGE: &str = "expression too large";

/// Go's repetition limit (`{n,m}` counts, also multiplied through nesting).
const MAX_REPEAT: u64 = 1000;
/// Go's `maxHeight`, applied to group nesting.
const MAX_NESTING: usize = 1000;
/// Matches nothing: what a class of surrogates or an empty class becomes.
const NEVER: &str = r"[^\x{0}-\x{10FFFF}]";
/// Go's general category names (`unicode.Categories`).
const CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N",
    "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So",
    "Z", "Zl", "Zp", "Zs",
];

/// Compiles a Go regular expression for unanchored matching (`MatchString`).
///
/// # Errors
/// Go's error text, e.g. ``error parsing regexp: missing closing ]: `[invalid(regex` ``.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    let translated = Translator::new(pattern).run().map_err(|e| e.to_string())?;
    RegexBuilder::new(&translated)
        .nest_limit(4 * MAX_NESTING as u32 + 64)
        .size_limit(10 << 20)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => GoError {
                code: LARGE,
                expr: pattern.to_owned(),
            }
            .to_string(),
            other => format!("error parsing regexp: {other}"),
        })
}

/// `syntax.Error`.
struct GoError {
    code: &'static str,
    expr: String,
}

impl std::fmt::Display for GoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

fn err(code: &'static str, expr: &str) -> GoError {
    GoError {
        code,
        expr: expr.to_owned(),
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    fold: bool,
    dot_nl: bool,
    multi_line: bool,
    non_greedy: bool,
}

/// A translated piece, and the repetition budget its `{n,m}` counts need (see `repeatIsValid`).
struct Atom {
    text: String,
    need: u64,
}

/// An open group: finished alternatives, the current one, and the flags to restore at `)`.
struct Frame {
    branches: Vec<Vec<Atom>>,
    current: Vec<Atom>,
    saved: Flags,
}

impl Frame {
    fn new(saved: Flags) -> Frame {
        Frame {
            branches: Vec::new(),
            current: Vec::new(),
            saved,
        }
    }

    fn into_atom(mut self) -> Atom {
        self.branches.push(self.current);
        let need = self
            .branches
            .iter()
            .flatten()
            .map(|a| a.need)
            .max()
            .unwrap_or(0);
        let text = self
            .branches
            .iter()
            .map(|b| b.iter().map(|a| a.text.as_str()).collect::<String>())
            .collect::<Vec<_>>()
            .join("|");
        Atom {
            text: format!("(?:{text})"),
            need,
        }
    }
}

struct Translator<'a> {
    s: &'a str,
    i: usize,
    flags: Flags,
    stack: Vec<Frame>,
}

/// One code point in the `regex` crate's syntax.
fn hex(c: u32) -> String {
    format!(r"\x{{{c:X}}}")
}

/// A literal; surrogates (reachable through `\x{D800}`) match nothing.
fn literal_text(c: u32) -> String {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() => ch.to_string(),
        Some(_) => hex(c),
        None => NEVER.to_owned(),
    }
}

/// Appends `lo-hi` to a class body, leaving out surrogates.
fn push_range(body: &mut String, lo: u32, hi: u32) {
    let mut part = |a: u32, b: u32| {
        if a == b {
            body.push_str(&hex(a));
        } else if a < b {
            body.push_str(&format!("{}-{}", hex(a), hex(b)));
        }
    };
    if lo <= 0xD7FF {
        part(lo, hi.min(0xD7FF));
    }
    if hi >= 0xE000 {
        part(lo.max(0xE000), hi);
    }
}

/// `\d \D \s \S \w \W` (ASCII, as in Go).
fn perl_class(c: u8) -> Option<&'static str> {
    Some(match c {
        b'd' => "[0-9]",
        b'D' => "[^0-9]",
        b's' => r"[\t\n\x0C\r ]",
        b'S' => r"[^\t\n\x0C\r ]",
        b'w' => "[0-9A-Za-z_]",
        b'W' => "[^0-9A-Za-z_]",
        _ => return None,
    })
}

/// Go's POSIX classes (`[:alpha:]`, `[:^alpha:]`).
fn posix_class(name: &str) -> Option<String> {
    let (negate, bare) = match name.strip_prefix("[:^") {
        Some(rest) => (true, format!("[:{rest}")),
        None => (false, name.to_owned()),
    };
    let body = match bare.as_str() {
        "[:alnum:]" => "0-9A-Za-z",
        "[:alpha:]" => "A-Za-z",
        "[:ascii:]" => r"\x00-\x7F",
        "[:blank:]" => r"\t ",
        "[:cntrl:]" => r"\x00-\x1F\x7F",
        "[:digit:]" => "0-9",
        "[:graph:]" => r"!-\x7E",
        "[:lower:]" => "a-z",
        "[:print:]" => r" -\x7E",
        "[:punct:]" => r"!-/:-@\[-`\{-\x7E",
        "[:space:]" => r"\t\n\x0B\x0C\r ",
        "[:upper:]" => "A-Z",
        "[:word:]" => "0-9A-Za-z_",
        "[:xdigit:]" => "0-9A-Fa-f",
        _ => return None,
    };
    Some(format!("[{}{body}]", if negate { "^" } else { "" }))
}

/// `parseUnicodeClass` on a text starting with `\p` or `\P`: the class and the bytes it used.
fn unicode_class(t: &str) -> Result<(String, usize), GoError> {
    let mut negate = t.as_bytes()[1] == b'P';
    let (len, name) = match t[2..].chars().next() {
        Some('{') => match t.find('}') {
            Some(end) => (end + 1, &t[3..end]),
            None => return Err(err(INVALID_CHAR_RANGE, t)),
        },
        Some(c) => (2 + c.len_utf8(), &t[2..2 + c.len_utf8()]),
        None => (2, ""),
    };
    let seq = &t[..len];
    let name = match name.strip_prefix('^') {
        Some(n) => {
            negate = !negate;
            n
        }
        None => name,
    };
    let class = match name {
        "Any" => r"\p{Any}".to_owned(),
        // Go's C has no unassigned code points, and surrogates never occur in a Rust string.
        "C" => r"[\p{Cc}\p{Cf}\p{Co}]".to_owned(),
        "Cs" => NEVER.to_owned(),
        n if CATEGORIES.contains(&n) => format!(r"\p{{{n}}}"),
        n if n.starts_with(|c: char| c.is_ascii_uppercase())
            && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && Regex::new(&format!(r"\p{{sc={n}}}")).is_ok() =>
        {
            format!(r"\p{{sc={n}}}")
        }
        _ => return Err(err(INVALID_CHAR_RANGE, seq)),
    };
    let class = if negate { format!("[^{class}]") } else { class };
    Ok((class, len))
}

/// `parseEscape`: the code point of a single-character escape and the bytes it used (`t` starts at `\`).
fn parse_escape(t: &str) -> Result<(u32, usize), GoError> {
    let Some(c) = t[1..].chars().next() else {
        return Err(err(TRAILING_BACKSLASH, ""));
    };
    let mut pos = 1 + c.len_utf8();
    let octal = |b: Option<&u8>| b.is_some_and(|b| (b'0'..=b'7').contains(b));
    let value = match c {
        // A single non-zero digit would be a backreference, which RE2 does not support.
        '1'..='7' if !octal(t.as_bytes().get(pos)) => return Err(err(INVALID_ESCAPE, &t[..pos])),
        '0'..='7' => {
            let mut r = c as u32 - '0' as u32;
            for _ in 1..3 {
                if !octal(t.as_bytes().get(pos)) {
                    break;
                }
                r = r * 8 + u32::from(t.as_bytes()[pos] - b'0');
                pos += 1;
            }
            r
        }
        'x' => {
            let Some(c2) = t[pos..].chars().next() else {
                return Err(err(INVALID_ESCAPE, &t[..pos]));
            };
            pos += c2.len_utf8();
            if c2 == '{' {
                let (mut r, mut digits) = (0u32, 0);
                loop {
                    let Some(ch) = t[pos..].chars().next() else {
                        return Err(err(INVALID_ESCAPE, &t[..pos]));
                    };
                    pos += ch.len_utf8();
                    if ch == '}' {
                        break;
                    }
                    match ch.to_digit(16) {
                        Some(v) if r * 16 + v <= 0x10FFFF => r = r * 16 + v,
                        _ => return Err(err(INVALID_ESCAPE, &t[..pos])),
                    }
                    digits += 1;
                }
                if digits == 0 {
                    return Err(err(INVALID_ESCAPE, &t[..pos]));
                }
                r
            } else {
                let c3 = t[pos..].chars().next();
                pos += c3.map_or(0, char::len_utf8);
                match (c2.to_digit(16), c3.and_then(|c| c.to_digit(16))) {
                    (Some(x), Some(y)) => x * 16 + y,
                    _ => return Err(err(INVALID_ESCAPE, &t[..pos])),
                }
            }
        }
        'a' => 7,
        'f' => 12,
        'n' => 10,
        'r' => 13,
        't' => 9,
        'v' => 11,
        // Escaped punctuation stands for itself.
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => c as u32,
        _ => return Err(err(INVALID_ESCAPE, &t[..pos])),
    };
    Ok((value, pos))
}

/// `parseRepeat` on a text starting with `{`: (min, max, bytes used); max is -1 for `{n,}`, and a count
/// too large to read is -1 as well. `None` means the `{` is a literal.
fn parse_repeat(t: &str) -> Option<(i64, i64, usize)> {
    let b = t.as_bytes();
    let int = |j: usize| -> Option<(i64, usize)> {
        if !b.get(j)?.is_ascii_digit()
            || (b[j] == b'0' && b.get(j + 1).is_some_and(u8::is_ascii_digit))
        {
            return None;
        }
        let end = j + b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        let mut n: i64 = 0;
        for d in &b[j..end] {
            if n >= 100_000_000 {
                n = -1;
                break;
            }
            n = n * 10 + i64::from(d - b'0');
        }
        Some((n, end))
    };
    let (mut min, mut j) = int(1)?;
    let max;
    if *b.get(j)? != b',' {
        max = min;
    } else {
        j += 1;
        if *b.get(j)? == b'}' {
            max = -1;
        } else {
            let (m, end) = int(j)?;
            j = end;
            max = m;
            if m < 0 {
                min = -1;
            }
        }
    }
    (*b.get(j)? == b'}').then_some((min, max, j + 1))
}

impl<'a> Translator<'a> {
    fn new(s: &'a str) -> Translator<'a> {
        Translator {
            s,
            i: 0,
            flags: Flags::default(),
            stack: vec![Frame::new(Flags::default())],
        }
    }

    fn frame(&mut self) -> &mut Frame {
        let last = self.stack.len() - 1;
        &mut self.stack[last]
    }

    fn push(&mut self, text: String) {
        self.frame().current.push(Atom { text, need: 0 });
    }

    /// A class or literal, case-folded when `(?i)` is on.
    fn push_folded(&mut self, text: String) {
        let text = if self.flags.fold {
            format!("(?i:{text})")
        } else {
            text
        };
        self.push(text);
    }

    fn literal(&mut self, c: u32) {
        self.push_folded(literal_text(c));
    }

    fn open(&mut self) -> Result<(), GoError> {
        if self.stack.len() > MAX_NESTING {
            return Err(err(NESTING_DEPTH, self.s));
        }
        let saved = self.flags;
        self.stack.push(Frame::new(saved));
        Ok(())
    }

    fn run(mut self) -> Result<String, GoError> {
        let s = self.s;
        let mut last_repeat: Option<usize> = None;
        while self.i < s.len() {
            let start = self.i;
            let mut repeat = None;
            let c = s[start..].chars().next().unwrap_or_default();
            match c {
                '(' if s[start..].starts_with("(?") => self.perl_flags()?,
                '(' => {
                    self.open()?;
                    self.i += 1;
                }
                '|' => {
                    let frame = self.frame();
                    let branch = std::mem::take(&mut frame.current);
                    frame.branches.push(branch);
                    self.i += 1;
                }
                ')' => {
                    if self.stack.len() == 1 {
                        return Err(err(UNEXPECTED_PAREN, s));
                    }
                    let frame = self
                        .stack
                        .pop()
                        .unwrap_or_else(|| Frame::new(Flags::default()));
                    self.flags = frame.saved;
                    let atom = frame.into_atom();
                    self.frame().current.push(atom);
                    self.i += 1;
                }
                '^' | '$' | '.' => {
                    let text = match (c, self.flags.multi_line, self.flags.dot_nl) {
                        ('^', true, _) => "(?m:^)",
                        ('^', false, _) => r"\A",
                        ('$', true, _) => "(?m:$)",
                        ('$', false, _) => r"\z",
                        (_, _, true) => "(?s:.)",
                        _ => ".",
                    };
                    self.push(text.to_owned());
                    self.i += 1;
                }
                '[' => {
                    let class = self.class()?;
                    self.push_folded(class);
                }
                '*' | '+' | '?' => {
                    self.i += 1;
                    self.repeat(start, None, last_repeat)?;
                    repeat = Some(start);
                }
                '{' => match parse_repeat(&s[start..]) {
                    None => {
                        self.literal(u32::from('{'));
                        self.i += 1;
                    }
                    Some((min, max, len)) => {
                        let end = start + len;
                        if !(0..=1000).contains(&min) || max > 1000 || (max >= 0 && min > max) {
                            return Err(err(INVALID_REPEAT_SIZE, &s[start..end]));
                        }
                        self.i = end;
                        self.repeat(start, Some((min, max)), last_repeat)?;
                        repeat = Some(start);
                    }
                },
                '\\' => self.escape()?,
                _ => {
                    self.literal(u32::from(c));
                    self.i += c.len_utf8();
                }
            }
            last_repeat = repeat;
        }
        if self.stack.len() > 1 {
            return Err(err(MISSING_PAREN, s));
        }
        let top = self
            .stack
            .pop()
            .map_or_else(String::new, |f| f.into_atom().text);
        Ok(top)
    }

    /// `p.repeat`: `self.i` is just past the operator (or the closing `}`).
    fn repeat(
        &mut self,
        start: usize,
        counts: Option<(i64, i64)>,
        last_repeat: Option<usize>,
    ) -> Result<(), GoError> {
        let s = self.s;
        if s[self.i..].starts_with('?') {
            self.i += 1; // non-greedy
        }
        let after = self.i;
        if let Some(previous) = last_repeat {
            return Err(err(INVALID_REPEAT_OP, &s[previous..after]));
        }
        let Some(operand) = self.frame().current.pop() else {
            return Err(err(MISSING_REPEAT_ARGUMENT, &s[start..after]));
        };
        let atom = match counts {
            None => Atom {
                text: format!("(?:{}){}", operand.text, &s[start..start + 1]),
                need: operand.need,
            },
            Some((min, max)) => {
                let need = match max {
                    0 => 0,
                    _ => match if max < 0 { min } else { max } as u64 {
                        0 => operand.need,
                        m => m.saturating_mul(operand.need.max(1)),
                    },
                };
                if (min >= 2 || max >= 2) && need > MAX_REPEAT {
                    return Err(err(INVALID_REPEAT_SIZE, &s[start..after]));
                }
                let count = match max {
                    m if m < 0 => format!("{{{min},}}"),
                    m if m == min => format!("{{{min}}}"),
                    m => format!("{{{min},{m}}}"),
                };
                Atom {
                    text: format!("(?:{}){count}", operand.text),
                    need: need.min(MAX_REPEAT + 1),
                }
            }
        };
        self.frame().current.push(atom);
        Ok(())
    }

    /// `parsePerlFlags`: named groups, `(?flags)` and `(?flags:`.
    fn perl_flags(&mut self) -> Result<(), GoError> {
        let t = &self.s[self.i..];
        let b = t.as_bytes();
        let with_p = t.len() > 4 && b[2] == b'P' && b[3] == b'<';
        if with_p || (t.len() > 3 && b[2] == b'<') {
            let begin = if with_p { 4 } else { 3 };
            let Some(end) = t.find('>') else {
                return Err(err(INVALID_NAMED_CAPTURE, t));
            };
            let name = &t[begin..end];
            if name.is_empty() || !name.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric()) {
                return Err(err(INVALID_NAMED_CAPTURE, &t[..=end]));
            }
            self.open()?;
            self.i += end + 1;
            return Ok(());
        }
        let mut flags = self.flags;
        let (mut negative, mut saw_flag) = (false, false);
        let mut j = 2;
        while let Some(c) = t[j..].chars().next() {
            j += c.len_utf8();
            match c {
                'i' | 'm' | 's' | 'U' => {
                    let on = !negative;
                    match c {
                        'i' => flags.fold = on,
                        'm' => flags.multi_line = on,
                        's' => flags.dot_nl = on,
                        _ => flags.non_greedy = on,
                    }
                    saw_flag = true;
                }
                '-' if !negative => {
                    negative = true;
                    saw_flag = false;
                }
                ':' | ')' if !negative || saw_flag => {
                    if c == ':' {
                        self.open()?;
                    }
                    self.flags = flags;
                    self.i += j;
                    return Ok(());
                }
                _ => break,
            }
        }
        Err(err(INVALID_PERL_OP, &t[..j]))
    }

    /// A backslash outside a class.
    fn escape(&mut self) -> Result<(), GoError> {
        let s = self.s;
        let t = &s[self.i..];
        let assertion = |text: &str| Some((text.to_owned(), 2));
        let simple = match t.as_bytes().get(1) {
            Some(b'A') => assertion(r"\A"),
            Some(b'z') => assertion(r"\z"),
            Some(b'b') => assertion(r"(?-u:\b)"),
            Some(b'B') => assertion(r"(?-u:\B)"),
            Some(b'C') => return Err(err(INVALID_ESCAPE, r"\C")),
            _ => None,
        };
        if let Some((text, len)) = simple {
            self.push(text);
            self.i += len;
            return Ok(());
        }
        match t.as_bytes().get(1) {
            Some(b'Q') => {
                let body = &t[2..];
                let (lit, used) = match body.find(r"\E") {
                    Some(k) => (&body[..k], 2 + k + 2),
                    None => (body, t.len()),
                };
                for ch in lit.chars() {
                    self.literal(u32::from(ch));
                }
                self.i += used;
            }
            Some(b'p' | b'P') => {
                let (class, len) = unicode_class(t)?;
                self.push_folded(class);
                self.i += len;
            }
            Some(&c) if perl_class(c).is_some() => {
                self.push_folded(perl_class(c).unwrap_or(NEVER).to_owned());
                self.i += 2;
            }
            _ => {
                let (c, len) = parse_escape(t)?;
                self.literal(c);
                self.i += len;
            }
        }
        Ok(())
    }

    /// `parseClass`, with `self.i` at `[`.
    fn class(&mut self) -> Result<String, GoError> {
        let s = self.s;
        let whole = &s[self.i..];
        let mut j = self.i + 1;
        let negate = s[j..].starts_with('^');
        if negate {
            j += 1;
        }
        let mut body = String::new();
        let mut first = true;
        while j >= s.len() || s.as_bytes()[j] != b']' || first {
            first = false;
            let rest = &s[j..];
            if rest.len() > 2
                && rest.starts_with("[:")
                && let Some(k) = rest[2..].find(":]")
            {
                let name = &rest[..k + 4];
                body.push_str(&posix_class(name).ok_or_else(|| err(INVALID_CHAR_RANGE, name))?);
                j += name.len();
                continue;
            }
            if rest.starts_with(r"\p") || rest.starts_with(r"\P") {
                let (class, len) = unicode_class(rest)?;
                body.push_str(&class);
                j += len;
                continue;
            }
            if let Some(class) = rest
                .strip_prefix('\\')
                .and_then(|r| r.bytes().next())
                .and_then(perl_class)
            {
                body.push_str(class);
                j += 2;
                continue;
            }
            let range_start = j;
            let (lo, len) = class_char(rest, whole)?;
            j += len;
            let mut hi = lo;
            if s.len() - j >= 2 && s.as_bytes()[j] == b'-' && s.as_bytes()[j + 1] != b']' {
                j += 1;
                let (h, len) = class_char(&s[j..], whole)?;
                j += len;
                hi = h;
                if hi < lo {
                    return Err(err(INVALID_CHAR_RANGE, &s[range_start..j]));
                }
            }
            push_range(&mut body, lo, hi);
        }
        self.i = j + 1;
        Ok(match (body.is_empty(), negate) {
            (true, false) => NEVER.to_owned(),
            (true, true) => "(?s:.)".to_owned(),
            (false, _) => format!("[{}{body}]", if negate { "^" } else { "" }),
        })
    }
}

/// `parseClassChar`: one character of a class, escapes included.
fn class_char(t: &str, whole: &str) -> Result<(u32, usize), GoError> {
    match t.chars().next() {
        None => Err(err(MISSING_BRACKET, whole)),
        Some('\\') => parse_escape(t),
        Some(c) => Ok((u32::from(c), c.len_utf8())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        compile(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(text)
    }

    #[test]
    fn matches_unanchored_like_match_string() {
        assert!(matches("v4", "large-engine-v4x"));
        assert!(matches("^large.engine.v.*$", "large.engine.v8"));
        assert!(!matches("^large.engine.v4$", "large.engine.v8"));
        assert!(matches(".*", ""));
        assert!(matches("", "anything"));
        assert!(matches("^app[0-9]+$", "app12"));
        assert!(matches(r"^a\d\w\s?$", "a1_"));
        assert!(!matches(r"^\d$", "٣"), "\\d is ASCII in Go");
        assert!(matches(r"(?i)^APP$", "app"));
        assert!(matches(r"a(?i)b|C", "c"), "(?i) reaches later alternatives");
        assert!(!matches(r"(?i:a)b", "aB"));
        assert!(matches(r"x{2,}", "axxb"));
        assert!(
            matches(r"a{,2}", "a{,2}"),
            "an unreadable repeat is literal"
        );
        assert!(matches(r"\Qa.b\E", "a.b"));
        assert!(!matches(r"\Qa.b\E", "axb"));
        assert!(matches(r"[[:alpha:]]+-[^[:digit:]]", "web-x"));
        assert!(matches(r"[]a]", "]"));
        assert!(matches(r"[a-]", "-"));
        assert!(matches(r"[a&&b]", "&"), "no class set operations in Go");
        assert!(matches(r"(?P<n>web)|(?<m>db)", "db"));
        assert!(matches(r"\bweb\b", "a web b"));
        assert!(matches(r"\x{41}\101\x41", "AAA"));
        assert!(matches(r"\pL\p{Greek}", "aλ"));
        assert!(matches(r"^(a*)*$", "aaa"));
        assert!(matches(r"^*a", "a"));
        assert!(matches(r"(?m)^b$", "a\nb"));
        assert!(!matches(r"^b$", "a\nb"));
        assert!(matches(r"(?s)a.b", "a\nb"));
        assert!(!matches(r"a.b", "a\nb"));
    }

    #[test]
    fn rejects_like_go_with_go_messages() {
        let table = [
            (
                "[invalid(regex",
                "error parsing regexp: missing closing ]: `[invalid(regex`",
            ),
            ("a[b", "error parsing regexp: missing closing ]: `[b`"),
            ("(abc", "error parsing regexp: missing closing ): `(abc`"),
            ("abc)", "error parsing regexp: unexpected ): `abc)`"),
            (
                "*a",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                "a|*",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                "(?i)+",
                "error parsing regexp: missing argument to repetition operator: `+`",
            ),
            (
                "a**",
                "error parsing regexp: invalid nested repetition operator: `**`",
            ),
            (
                "a*?*",
                "error parsing regexp: invalid nested repetition operator: `*?*`",
            ),
            (
                "a{2}{3}",
                "error parsing regexp: invalid nested repetition operator: `{2}{3}`",
            ),
            (
                "a{1001}",
                "error parsing regexp: invalid repeat count: `{1001}`",
            ),
            (
                "a{2,1}",
                "error parsing regexp: invalid repeat count: `{2,1}`",
            ),
            (
                "(a{500}){3}",
                "error parsing regexp: invalid repeat count: `{3}`",
            ),
            (
                r"\q",
                "error parsing regexp: invalid escape sequence: `\\q`",
            ),
            (
                r"\1",
                "error parsing regexp: invalid escape sequence: `\\1`",
            ),
            (
                r"\C",
                "error parsing regexp: invalid escape sequence: `\\C`",
            ),
            (
                r"\xZZ",
                "error parsing regexp: invalid escape sequence: `\\xZZ`",
            ),
            (
                r"\x{}",
                "error parsing regexp: invalid escape sequence: `\\x{}`",
            ),
            (
                r"[\b]",
                "error parsing regexp: invalid escape sequence: `\\b`",
            ),
            (
                "a\\",
                "error parsing regexp: trailing backslash at end of expression: ``",
            ),
            (
                "[z-a]",
                "error parsing regexp: invalid character class range: `z-a`",
            ),
            (
                "[[:foo:]]",
                "error parsing regexp: invalid character class range: `[:foo:]`",
            ),
            (
                r"\pX",
                "error parsing regexp: invalid character class range: `\\pX`",
            ),
            (
                r"\p{Foo}",
                "error parsing regexp: invalid character class range: `\\p{Foo}`",
            ),
            (
                r"\p{L",
                "error parsing regexp: invalid character class range: `\\p{L`",
            ),
            (
                "(?P<1-x>a)",
                "error parsing regexp: invalid named capture: `(?P<1-x>`",
            ),
            (
                "(?P<name",
                "error parsing regexp: invalid named capture: `(?P<name`",
            ),
            (
                "(?x)a",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?x`",
            ),
            (
                "(?P=n)",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?P`",
            ),
            (
                "(?i-)a",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?i-)`",
            ),
        ];
        for (pattern, message) in table {
            assert_eq!(
                compile(pattern).err().as_deref(),
                Some(message),
                "{pattern}"
            );
        }
    }

    #[test]
    fn accepts_what_go_accepts() {
        for p in [
            "a{,5}",
            "{",
            "a{",
            "x{2}?",
            "(?i)(?-i)a",
            "(?:)",
            "a|",
            "()",
            r"\Q\E",
            "[^\\x00-\\x{10FFFF}]",
            r"\x{D800}",
            "(?U)a+",
        ] {
            assert!(compile(p).is_ok(), "{p}");
        }
    }
}
