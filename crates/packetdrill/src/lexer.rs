//! The tokens of a packetdrill script, each with the line and column it starts at.
//!
//! Whitespace and newlines only separate tokens (packetdrill's grammar is free-form); `//`
//! comments run to the end of the line and `/* */` comments may span lines. A `-` directly
//! before a digit belongs to the number (`= -1 ENOENT`), as in packetdrill's lexer; `--name`
//! starts an option line. Numbers with a fraction are kept as text so that times convert to
//! nanoseconds exactly.

use crate::error::{ErrorKind, ScriptError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A decimal integer, possibly negative.
    Int(i64),
    /// A number with a fractional part (`0.100`, `.1`), as written.
    Decimal(String),
    Hex(u64),
    Word(String),
    /// A double-quoted string without its quotes (escapes resolved).
    Str(String),
    /// `--name`, the start of an option line.
    OptionName(String),
    /// The text between `%{` and `}%`; the token's position is that of its first character.
    Code(String),
    /// A back-quoted shell command.
    Backquoted,
    Ellipsis,
    Punct(char),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Int(n) => format!("`{n}`"),
            Tok::Decimal(text) => format!("`{text}`"),
            Tok::Hex(n) => format!("`{n:#x}`"),
            Tok::Word(w) => format!("`{w}`"),
            Tok::Str(s) => format!("{s:?}"),
            Tok::OptionName(name) => format!("`--{name}`"),
            Tok::Code(_) => "a %{ }% block".to_string(),
            Tok::Backquoted => "a back-quoted command".to_string(),
            Tok::Ellipsis => "`...`".to_string(),
            Tok::Punct(c) => format!("`{c}`"),
        }
    }
}

impl Tok {
    /// A non-negative number of seconds (`1`, `0.100`, `.1`) in nanoseconds, exactly; None
    /// for anything else, a negative number, more than nine decimals or an overflow.
    pub fn seconds_ns(&self) -> Option<u64> {
        match self {
            Tok::Int(n) => u64::try_from(*n).ok()?.checked_mul(1_000_000_000),
            Tok::Decimal(text) => {
                let (whole, fraction) = text.split_once('.')?;
                if whole.starts_with('-') || fraction.len() > 9 {
                    return None;
                }
                let whole_ns = if whole.is_empty() { 0 } else { whole.parse::<u64>().ok()?.checked_mul(1_000_000_000)? };
                let fraction_ns: u64 = format!("{fraction:0<9}").parse().ok()?;
                whole_ns.checked_add(fraction_ns)
            }
            _ => None,
        }
    }
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: u32,
    column: u32,
}

impl Lexer<'_> {
    fn pos(&self) -> Pos {
        Pos { line: self.line, column: self.column }
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    /// The character after the next one.
    fn peek2(&self) -> Option<char> {
        let mut ahead = self.chars.clone();
        ahead.next();
        ahead.next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> String {
        let mut text = String::new();
        while let Some(c) = self.peek().filter(|&c| keep(c)) {
            text.push(c);
            self.bump();
        }
        text
    }

    /// Skips whitespace and comments; fails on an unterminated `/*`.
    fn skip_blanks(&mut self) -> Result<(), ScriptError> {
        loop {
            match (self.peek(), self.peek2()) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('/'), Some('/')) => {
                    self.take_while(|c| c != '\n');
                }
                (Some('/'), Some('*')) => {
                    let start = self.pos();
                    self.bump();
                    self.bump();
                    loop {
                        match self.bump() {
                            Some('*') if self.peek() == Some('/') => {
                                self.bump();
                                break;
                            }
                            Some(_) => {}
                            None => return Err(error(start, ErrorKind::Unterminated("comment /* ... */"))),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn number(&mut self, start: Pos) -> Result<Tok, ScriptError> {
        let mut text = String::new();
        if self.peek() == Some('-') {
            text.push('-');
            self.bump();
        }
        if self.peek() == Some('0') && matches!(self.peek2(), Some('x' | 'X')) {
            self.bump();
            self.bump();
            let digits = self.take_while(|c| c.is_ascii_hexdigit());
            return u64::from_str_radix(&digits, 16).map(Tok::Hex).map_err(|_| too_large(start, &format!("0x{digits}")));
        }
        text.push_str(&self.take_while(|c| c.is_ascii_digit()));
        if self.peek() == Some('.') && self.peek2().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
            text.push('.');
            text.push_str(&self.take_while(|c| c.is_ascii_digit()));
            return Ok(Tok::Decimal(text));
        }
        text.parse().map(Tok::Int).map_err(|_| too_large(start, &text))
    }

    fn string(&mut self, start: Pos) -> Result<Tok, ScriptError> {
        self.bump();
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('"') => return Ok(Tok::Str(text)),
                Some('\\') => match self.bump() {
                    Some(c) => text.push(c),
                    None => break,
                },
                Some(c) => text.push(c),
                None => break,
            }
        }
        Err(error(start, ErrorKind::Unterminated("string")))
    }

    /// `%{ ... }%`: the text between the delimiters, positioned at its first character.
    fn code(&mut self, start: Pos) -> Result<Token, ScriptError> {
        self.bump();
        self.bump();
        let inside = self.pos();
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('}') if self.peek() == Some('%') => {
                    self.bump();
                    return Ok(Token { tok: Tok::Code(text), pos: inside });
                }
                Some(c) => text.push(c),
                None => return Err(error(start, ErrorKind::Unterminated("code block %{ ... }%"))),
            }
        }
    }

    fn backquoted(&mut self, start: Pos) -> Result<Tok, ScriptError> {
        self.bump();
        loop {
            match self.bump() {
                Some('`') => return Ok(Tok::Backquoted),
                Some('\\') => {
                    self.bump();
                }
                Some(_) => {}
                None => return Err(error(start, ErrorKind::Unterminated("back-quoted command"))),
            }
        }
    }

    fn next_token(&mut self) -> Result<Option<Token>, ScriptError> {
        self.skip_blanks()?;
        let pos = self.pos();
        let Some(c) = self.peek() else { return Ok(None) };
        let next = self.peek2();
        let tok = match c {
            '0'..='9' => self.number(pos)?,
            '-' if next.is_some_and(|d| d.is_ascii_digit()) => self.number(pos)?,
            '.' if next.is_some_and(|d| d.is_ascii_digit()) => self.number(pos)?,
            '-' if next == Some('-') => {
                self.bump();
                self.bump();
                Tok::OptionName(self.take_while(is_word_char))
            }
            '.' if next == Some('.') => {
                self.bump();
                self.bump();
                if self.peek() != Some('.') {
                    return Err(error(pos, ErrorKind::Expected { expected: "`...`".to_string(), found: "`..`".to_string() }));
                }
                self.bump();
                Tok::Ellipsis
            }
            c if is_word_char(c) => Tok::Word(self.take_while(is_word_char)),
            '"' => self.string(pos)?,
            '%' if next == Some('{') => return self.code(pos).map(Some),
            '`' => self.backquoted(pos)?,
            '+' | '*' | '~' | '<' | '>' | '.' | ':' | '(' | ')' | '[' | ']' | '{' | '}' | ',' | '=' | '|' | '-' | ';' => {
                self.bump();
                Tok::Punct(c)
            }
            other => return Err(error(pos, ErrorKind::UnexpectedCharacter(other))),
        };
        Ok(Some(Token { tok, pos }))
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn error(pos: Pos, kind: ErrorKind) -> ScriptError {
    ScriptError::new(pos.line, pos.column, kind)
}

fn too_large(pos: Pos, text: &str) -> ScriptError {
    error(pos, ErrorKind::OutOfRange { what: "number".to_string(), value: text.to_string(), allowed: "64-bit integers".to_string() })
}

/// The script's tokens in order.
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, ScriptError> {
    let mut lexer = Lexer { chars: text.chars().peekable(), line: 1, column: 1 };
    let mut tokens = Vec::new();
    while let Some(token) = lexer.next_token()? {
        tokens.push(token);
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        tokenize(text).expect("valid").into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn packet_lines_split_as_packetdrill_does() {
        assert_eq!(
            toks("+.1 < S. 0:0(0) ack 1 <...>"),
            vec![
                Tok::Punct('+'),
                Tok::Decimal(".1".into()),
                Tok::Punct('<'),
                Tok::Word("S".into()),
                Tok::Punct('.'),
                Tok::Int(0),
                Tok::Punct(':'),
                Tok::Int(0),
                Tok::Punct('('),
                Tok::Int(0),
                Tok::Punct(')'),
                Tok::Word("ack".into()),
                Tok::Int(1),
                Tok::Punct('<'),
                Tok::Ellipsis,
                Tok::Punct('>'),
            ]
        );
        assert_eq!(toks("= -1 ENOENT"), vec![Tok::Punct('='), Tok::Int(-1), Tok::Word("ENOENT".into())]);
        assert_eq!(toks("--tolerance_usecs=10000"), vec![Tok::OptionName("tolerance_usecs".into()), Tok::Punct('='), Tok::Int(10000)]);
    }

    #[test]
    fn seconds_convert_exactly() {
        assert_eq!(Tok::Decimal("0.1".into()).seconds_ns(), Some(100_000_000));
        assert_eq!(Tok::Decimal(".001".into()).seconds_ns(), Some(1_000_000));
        assert_eq!(Tok::Decimal("2.000000001".into()).seconds_ns(), Some(2_000_000_001));
        assert_eq!(Tok::Int(3).seconds_ns(), Some(3_000_000_000));
        assert_eq!(Tok::Int(-1).seconds_ns(), None);
        assert_eq!(Tok::Decimal("0.0000000001".into()).seconds_ns(), None);
    }

    #[test]
    fn comments_and_positions() {
        let tokens = tokenize("// one\n/* two\n three */ 0.100 socket // four\n  %{ assert x }%").expect("valid");
        assert_eq!(tokens[0], Token { tok: Tok::Decimal("0.100".into()), pos: Pos { line: 3, column: 11 } });
        assert_eq!(tokens[1].pos, Pos { line: 3, column: 17 });
        assert_eq!(tokens[2], Token { tok: Tok::Code(" assert x ".into()), pos: Pos { line: 4, column: 5 } });
    }

    #[test]
    fn bad_input_names_its_position() {
        let err = tokenize("0 socket()\n  /* open").unwrap_err();
        assert_eq!((err.line, err.column, err.kind), (2, 3, ErrorKind::Unterminated("comment /* ... */")));
        let err = tokenize("0 $").unwrap_err();
        assert_eq!((err.line, err.column, err.kind), (1, 3, ErrorKind::UnexpectedCharacter('$')));
        assert!(matches!(tokenize("99999999999999999999").unwrap_err().kind, ErrorKind::OutOfRange { .. }));
        assert_eq!(tokenize("\"abc").unwrap_err().kind, ErrorKind::Unterminated("string"));
        assert_eq!(tokenize("%{ assert").unwrap_err().kind, ErrorKind::Unterminated("code block %{ ... }%"));
    }
}
