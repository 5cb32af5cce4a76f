//! Quoting data and hierarchy values in error messages.
//!
//! Values are matched byte for byte (a data value `'F '` with a trailing space is not the
//! hierarchy's `'F'`), so an error that names a value must show every byte of it. A value
//! is quoted in single quotes; characters that would be invisible or ambiguous there are
//! escaped:
//!
//! | in the value | shown as |
//! |---|---|
//! | a space at the start or the end | `\x20` |
//! | tab, newline, carriage return, NUL | `\t`, `\n`, `\r`, `\0` |
//! | `\` and `'` | `\\` and `\'` |
//! | any other control, format (zero-width, byte-order mark, direction marks) or non-ASCII whitespace character (no-break space, ...) | `\u{a0}` (its code point in hex) |
//! | a combining diacritical mark (U+0300–U+036F, U+1AB0–U+1AFF, U+1DC0–U+1DFF, U+20D0–U+20FF, U+FE20–U+FE2F), which would merge with the letter before it | `\u{301}` |
//!
//! Every other character, spaces inside the value included, is shown as it is, so `'école'`
//! written with a precomposed `é` and `'e\u{301}cole'` (an `e` and a combining acute accent,
//! Unicode's decomposed form) look different. Every error that quotes a value read from
//! data or from a hierarchy uses [`quote`].

use std::fmt::Write;

/// `value` in single quotes, with invisible and ambiguous characters escaped (see the
/// module documentation).
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            ' ' if i == 0 || i == last => out.push_str("\\x20"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if is_invisible(c) || is_combining_mark(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Characters a reader cannot see or tell from a space: controls, non-ASCII whitespace
/// and the format characters (zero-width spaces and joiners, direction marks, the
/// byte-order mark, the soft hyphen, ...).
fn is_invisible(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{61c}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// The combining diacritical marks of the script-independent blocks (the accents Unicode's
/// decomposed forms use for Latin, Greek and Cyrillic letters): shown as they are, they
/// merge with the letter before them and the value looks like its precomposed form.
fn is_combining_mark(c: char) -> bool {
    matches!(
        c,
        '\u{300}'..='\u{36f}'
            | '\u{1ab0}'..='\u{1aff}'
            | '\u{1dc0}'..='\u{1dff}'
            | '\u{20d0}'..='\u{20ff}'
            | '\u{fe20}'..='\u{fe2f}'
    )
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn plain_values_are_unchanged() {
        assert_eq!(quote("99"), "'99'");
        assert_eq!(quote("[30-50)"), "'[30-50)'");
        assert_eq!(quote("New York"), "'New York'");
        assert_eq!(quote("Zürich"), "'Zürich'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn invisible_characters_are_escaped() {
        assert_eq!(quote("F "), "'F\\x20'");
        assert_eq!(quote(" F"), "'\\x20F'");
        assert_eq!(quote(" "), "'\\x20'");
        assert_eq!(quote("a\tb\r\n"), "'a\\tb\\r\\n'");
        assert_eq!(quote("F\u{a0}"), "'F\\u{a0}'");
        assert_eq!(quote("\u{feff}F"), "'\\u{feff}F'");
        assert_eq!(quote("F\u{200b}"), "'F\\u{200b}'");
        assert_eq!(quote("a\0"), "'a\\0'");
        assert_eq!(quote("\u{1b}[31m"), "'\\u{1b}[31m'");
    }

    /// A decomposed accent is shown as its code point, so the decomposed and the
    /// precomposed spelling of a word look different.
    #[test]
    fn combining_marks_are_escaped() {
        assert_eq!(quote("e\u{301}cole"), "'e\\u{301}cole'");
        assert_eq!(quote("\u{e9}cole"), "'école'");
        assert_eq!(quote("n\u{303}"), "'n\\u{303}'");
    }

    #[test]
    fn quotes_and_backslashes_are_unambiguous() {
        assert_eq!(quote("it's"), "'it\\'s'");
        assert_eq!(quote("a\\x20"), "'a\\\\x20'");
    }
}
