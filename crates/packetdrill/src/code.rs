//! `%{ ... }%` blocks. packetdrill runs them as Python with the socket's `TCP_INFO` fields in
//! scope (`tcpi_snd_cwnd`, ...); millinet runs the statement scripts use to check TCP state,
//! `assert A op B [op C ...] [and ...] [, message]`, with integers and `tcpi_*` fields as terms and `==`, `!=`, `<`, `<=`, `>`, `>=` chained as
//! in Python (`98000 <= tcpi_rtt <= 110000`). Statements are separated by `;` or newlines;
//! the message after the comma is not evaluated. Anything else is refused.

use crate::error::{ErrorKind, ScriptError};
use crate::lexer::Pos;
use crate::tcpinfo::TcpiField;

/// One `assert` statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assertion {
    /// The condition as written, for messages.
    pub text: String,
    pub line: u32,
    pub column: u32,
    /// All must hold (`and`).
    pub chains: Vec<Chain>,
}

/// `t0 op0 t1 op1 t2 ...`: every `ti opi ti+1` must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    pub terms: Vec<Term>,
    pub ops: Vec<Cmp>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    Int(i64),
    Field(TcpiField),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

impl Assertion {
    /// Whether the assertion holds, given each field's value.
    pub fn holds(&self, value: impl Fn(TcpiField) -> i64) -> bool {
        let eval = |term: Term| match term {
            Term::Int(n) => n,
            Term::Field(field) => value(field),
        };
        self.chains.iter().all(|chain| chain.ops.iter().enumerate().all(|(i, op)| op.holds(eval(chain.terms[i]), eval(chain.terms[i + 1]))))
    }

    /// The fields the assertion reads.
    pub fn fields(&self) -> impl Iterator<Item = TcpiField> + '_ {
        self.chains.iter().flat_map(|c| c.terms.iter()).filter_map(|t| match t {
            Term::Field(f) => Some(*f),
            Term::Int(_) => None,
        })
    }
}

const SUPPORTED: &str =
    "assert with ==, !=, <, <=, >, >= between integers and tcpi_* fields, joined by `and`, optionally followed by `, message`";

#[derive(Clone, Debug, PartialEq, Eq)]
enum Word {
    Int(i64),
    Name(String),
    Op(Cmp),
    Comma,
    Other(char),
}

/// A statement's words with their positions.
fn words(chars: &[(char, Pos)]) -> Result<Vec<(Word, Pos)>, ScriptError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (c, pos) = chars[i];
        let next = chars.get(i + 1).map(|&(c, _)| c);
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let take = |i: &mut usize, keep: fn(char) -> bool| {
            let start = *i;
            while *i < chars.len() && keep(chars[*i].0) {
                *i += 1;
            }
            chars[start..*i].iter().map(|&(c, _)| c).collect::<String>()
        };
        let word = if c.is_ascii_digit() || (c == '-' && next.is_some_and(|d| d.is_ascii_digit())) {
            i += 1;
            let text = format!("{c}{}", take(&mut i, |c| c.is_ascii_digit()));
            let n = text.parse().map_err(|_| {
                ScriptError::new(
                    pos.line,
                    pos.column,
                    ErrorKind::OutOfRange { what: "integer".into(), value: text.clone(), allowed: "64-bit integers".into() },
                )
            })?;
            Word::Int(n)
        } else if c.is_ascii_alphabetic() || c == '_' {
            Word::Name(take(&mut i, |c| c.is_ascii_alphanumeric() || c == '_'))
        } else {
            let (word, len) = match (c, next) {
                ('=', Some('=')) => (Word::Op(Cmp::Eq), 2),
                ('!', Some('=')) => (Word::Op(Cmp::Ne), 2),
                ('<', Some('=')) => (Word::Op(Cmp::Le), 2),
                ('>', Some('=')) => (Word::Op(Cmp::Ge), 2),
                ('<', _) => (Word::Op(Cmp::Lt), 1),
                ('>', _) => (Word::Op(Cmp::Gt), 1),
                (',', _) => (Word::Comma, 1),
                (other, _) => (Word::Other(other), 1),
            };
            i += len;
            word
        };
        out.push((word, pos));
    }
    Ok(out)
}

fn unsupported(pos: Pos, what: String) -> ScriptError {
    ScriptError::new(pos.line, pos.column, ErrorKind::Unsupported { what, supported: SUPPORTED.to_string() })
}

fn describe(word: &Word) -> String {
    match word {
        Word::Int(n) => format!("`{n}`"),
        Word::Name(name) => format!("`{name}`"),
        Word::Op(_) => "a comparison".to_string(),
        Word::Comma => "`,`".to_string(),
        Word::Other(c) => format!("`{c}`"),
    }
}

fn term(word: &Word, pos: Pos) -> Result<Term, ScriptError> {
    match word {
        Word::Int(n) => Ok(Term::Int(*n)),
        Word::Name(name) => TcpiField::by_name(name).map(Term::Field).ok_or_else(|| {
            ScriptError::new(
                pos.line,
                pos.column,
                ErrorKind::Unsupported {
                    what: format!("the name `{name}`"),
                    supported: format!("integers and the fields {}", TcpiField::names()),
                },
            )
        }),
        other => Err(ScriptError::new(
            pos.line,
            pos.column,
            ErrorKind::Expected { expected: "an integer or a tcpi_* field".into(), found: describe(other) },
        )),
    }
}

/// One statement: `assert` and its condition.
fn statement(chars: &[(char, Pos)]) -> Result<Option<Assertion>, ScriptError> {
    let words = words(chars)?;
    let Some(((first, start), rest)) = words.split_first() else { return Ok(None) };
    if *first != Word::Name("assert".to_string()) {
        return Err(unsupported(*start, format!("the statement starting with {}", describe(first))));
    }
    // The message after a top-level comma is Python's business, not evaluated here.
    let condition: Vec<&(Word, Pos)> = rest.iter().take_while(|(w, _)| *w != Word::Comma).collect();
    let Some(&&(_, condition_start)) = condition.first() else {
        return Err(ScriptError::new(
            start.line,
            start.column,
            ErrorKind::Expected { expected: "a condition after assert".into(), found: "nothing".into() },
        ));
    };
    let mut chains = Vec::new();
    for part in condition.split(|(w, _)| *w == Word::Name("and".to_string())) {
        let Some(&&(_, part_start)) = part.first() else {
            return Err(ScriptError::new(condition_start.line, condition_start.column, ErrorKind::Invalid("empty side of `and`".into())));
        };
        let mut chain = Chain { terms: Vec::new(), ops: Vec::new() };
        for (k, (word, pos)) in part.iter().enumerate() {
            if k % 2 == 0 {
                chain.terms.push(term(word, *pos)?);
            } else if let Word::Op(op) = word {
                chain.ops.push(*op);
            } else {
                return Err(ScriptError::new(
                    pos.line,
                    pos.column,
                    ErrorKind::Expected { expected: "a comparison".into(), found: describe(word) },
                ));
            }
        }
        if chain.ops.is_empty() || chain.terms.len() != chain.ops.len() + 1 {
            return Err(unsupported(part_start, "a condition that is not a comparison".to_string()));
        }
        chains.push(chain);
    }
    let end = chars.iter().position(|&(c, _)| c == ',').unwrap_or(chars.len());
    let text: String = chars[..end].iter().map(|&(c, _)| c).collect::<String>().trim().trim_start_matches("assert").trim().to_string();
    Ok(Some(Assertion { text, line: start.line, column: start.column, chains }))
}

/// The assertions of a code block whose text starts at `pos`.
pub(crate) fn parse(text: &str, pos: Pos) -> Result<Vec<Assertion>, ScriptError> {
    // Every character with its position; a backslash before a newline continues the line.
    let mut chars = Vec::new();
    let (mut line, mut column) = (pos.line, pos.column);
    let mut iter = text.chars().peekable();
    while let Some(c) = iter.next() {
        let here = Pos { line, column };
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
        if c == '\\' && iter.peek() == Some(&'\n') {
            chars.push((' ', here));
            continue;
        }
        chars.push((c, here));
    }
    let mut assertions = Vec::new();
    for statement_chars in chars.split(|&(c, _)| c == ';' || c == '\n') {
        assertions.extend(statement(statement_chars)?);
    }
    Ok(assertions)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Pos = Pos { line: 7, column: 3 };

    #[test]
    fn chained_comparisons_and_messages() {
        let asserts =
            parse(" assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd;\n assert 98000 <= tcpi_rtt <= 110000 and tcpi_total_retrans != 0 ", AT)
                .expect("valid");
        assert_eq!(asserts.len(), 2);
        assert_eq!(asserts[0].text, "tcpi_snd_cwnd == 10");
        assert_eq!((asserts[0].line, asserts[0].column), (7, 4));
        assert_eq!((asserts[1].line, asserts[1].column), (8, 2));
        let values = |f: TcpiField| match f {
            TcpiField::Rtt => 100_000,
            TcpiField::TotalRetrans => 1,
            _ => 10,
        };
        assert!(asserts[0].holds(values));
        assert!(asserts[1].holds(values));
        assert!(!asserts[1].holds(|_| 0));
    }

    #[test]
    fn other_python_is_refused_with_its_position() {
        let err = parse(" print(tcpi_snd_cwnd)", AT).unwrap_err();
        assert_eq!((err.line, err.column), (7, 4));
        assert!(matches!(err.kind, ErrorKind::Unsupported { .. }), "{err}");
        let err = parse(" assert tcpi_nonsense == 1", AT).unwrap_err();
        assert_eq!((err.line, err.column), (7, 11));
        assert!(err.to_string().contains("tcpi_snd_cwnd"), "lists the fields: {err}");
        assert!(matches!(parse(" assert tcpi_rtt", AT).unwrap_err().kind, ErrorKind::Unsupported { .. }));
        assert!(matches!(parse(" assert tcpi_rtt == == 3", AT).unwrap_err().kind, ErrorKind::Expected { .. }));
    }
}
