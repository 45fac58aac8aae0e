//! The small CSV dialect of the trace files: one header line, then rows of
//! comma-separated fields (no quoting, surrounding spaces ignored). Blank lines
//! and lines starting with `#` are skipped; line numbers count every line.

use super::error::TraceError;

/// A data row: its 1-based line number and trimmed fields.
pub(crate) struct Row<'a> {
    pub line: usize,
    pub fields: Vec<&'a str>,
}

/// Split `text` into the header fields and the data rows, checking the
/// header with `header_ok` (its error names `expected_header`) and that every
/// row has as many fields as the header.
pub(crate) fn rows<'a>(
    text: &'a str,
    file: &str,
    expected_header: &str,
    header_ok: impl Fn(&[&str]) -> bool,
) -> Result<(Vec<&'a str>, Vec<Row<'a>>), TraceError> {
    // Spreadsheet exports often start with a byte-order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((hline, header)) = lines.next() else {
        return Err(TraceError::bad(file, 1, "header", "", format!("{expected_header} (the file is empty)")));
    };
    let header_fields = split(header);
    if !header_ok(&header_fields) {
        return Err(TraceError::bad(file, hline, "header", header, expected_header.to_string()));
    }
    let mut out = Vec::new();
    for (line, l) in lines {
        let fields = split(l);
        if fields.len() != header_fields.len() {
            return Err(TraceError::bad(
                file,
                line,
                "row",
                l,
                format!("{} comma-separated columns ({})", header_fields.len(), header_fields.join(",")),
            ));
        }
        out.push(Row { line, fields });
    }
    if out.is_empty() {
        return Err(TraceError::bad(file, hline + 1, "row", "", "at least one data row after the header"));
    }
    Ok((header_fields, out))
}

fn split(line: &str) -> Vec<&str> {
    line.split(',').map(str::trim).collect()
}

/// A finite number ≥ `min` in column `field`; `what` describes the bound
/// for the message (e.g. "≥ 0", "≥ the previous time 1.5").
pub(crate) fn number(file: &str, line: usize, field: &str, value: &str, min: f64, what: &str) -> Result<f64, TraceError> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= min => Ok(v),
        _ => Err(TraceError::bad(file, line, field, value, format!("a number {what}"))),
    }
}
