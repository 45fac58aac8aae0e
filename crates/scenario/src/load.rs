//! Reading a scenario file, applying `key.path=value` overrides, and turning every
//! mistake into one message that names the file and line (or the override), the
//! key, the bad value and what is allowed.

use std::path::Path;

use serde::de::value::StrDeserializer;
use serde::Deserialize;
use serde_path_to_error::Segment;
use toml_edit::{DocumentMut, ImDocument, Item, Table, Value};

use super::schema::{ProxySpec, Scenario};
use super::validate::{validate, validate_proxy_settings, Issue};
use crate::profile::TcpProfile;
use crate::radio::FileDefault;
use crate::ConfigError;

/// A scenario ready to build, and how to name it.
pub struct Loaded {
    pub scenario: Scenario,
    /// The file stem, e.g. "dumbbell".
    pub name: String,
    /// Folder of the scenario file: trace paths are relative to it.
    pub base_dir: std::path::PathBuf,
}

/// One override: the dotted path and the raw text after '='.
struct Override {
    path: Vec<String>,
    raw: String,
}

pub fn load(path: &Path, overrides: &[String], seed: Option<u64>) -> Result<Loaded, ConfigError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ConfigError::new(format!("cannot read scenario file {file}: {}", io_reason(&e))))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = line_of(&String::from_utf8_lossy(e.as_bytes()), e.utf8_error().valid_up_to());
        ConfigError::new(format!("{file}: line {line}: the file is not UTF-8 text; a scenario is a TOML file"))
    })?;
    let scenario = load_text(&text, &file, overrides, seed)?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(Loaded { scenario, name, base_dir })
}

/// `load` on text already read: `file` names it in messages. Apart from reading the file,
/// everything that can go wrong with a scenario happens here, so the fuzzer drives it
/// without touching the file system.
pub fn load_text(text: &str, file: &str, overrides: &[String], seed: Option<u64>) -> Result<Scenario, ConfigError> {
    let mut parsed: Vec<Override> = overrides.iter().map(|o| parse_override(o)).collect::<Result<_, _>>()?;
    if let Some(seed) = seed {
        parsed.push(Override { path: vec!["seed".into()], raw: seed.to_string() });
    }
    resolve(text, file, parsed, fill_defaults, validate)
}

/// A daemon's proxy configuration (crates/proxyd): a TOML file whose one table is `[proxy]`,
/// with the keys of a scenario's, and `--set proxy.KEY=VALUE` overrides, checked as a
/// scenario's `[proxy]` table is. `node` is not asked for: the daemon is where it runs.
pub fn load_proxy_text(text: &str, file: &str, overrides: &[String]) -> Result<ProxySpec, ConfigError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ProxyFile {
        #[serde(default)]
        proxy: ProxySpec,
    }
    let parsed: Vec<Override> = overrides.iter().map(|o| parse_override(o)).collect::<Result<_, _>>()?;
    let file: ProxyFile = resolve(text, file, parsed, |_, _| {}, |f: &ProxyFile| validate_proxy_settings(&f.proxy))?;
    Ok(file.proxy)
}

/// Parses `text`, applies the overrides, deserialises and checks the result; every error
/// names where the bad value was written (file and line, or the override).
fn resolve<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &str,
    parsed: Vec<Override>,
    fill_defaults: impl Fn(&mut DocumentMut, &[Override]),
    check: impl Fn(&T) -> Result<(), Issue>,
) -> Result<T, ConfigError> {
    let original = ImDocument::parse(text.to_string()).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        ConfigError::new(format!("{file}: line {line}: TOML syntax error: {}", one_line(e.message())))
    })?;
    let mut doc: DocumentMut = original.clone().into_mut();
    for o in &parsed {
        apply(&mut doc, o)?;
    }
    fill_defaults(&mut doc, &parsed);

    let resolved_text = doc.to_string();
    let where_ = |path: &[String]| -> String {
        // The override that wrote this key, or created the table it sits in.
        let written_by = |o: &&Override| o.path.starts_with(path) || path.starts_with(&o.path);
        match parsed.iter().rev().find(written_by) {
            Some(o) => format!("--set {}={}", o.path.join("."), o.raw),
            None => match find_line(&original, text, path) {
                Some(line) => format!("{file}: line {line}"),
                None => file.to_string(),
            },
        }
    };

    let value: T = serde_path_to_error::deserialize(toml::Deserializer::new(&resolved_text)).map_err(|e| {
        let path = path_segments(e.path());
        let message = plain_message(e.inner().message());
        let key = path.join(".");
        let key = if key.is_empty() { String::new() } else { format!("{key}: ") };
        ConfigError::new(format!("{}: {key}{message}", where_(&path)))
    })?;

    check(&value).map_err(|issue| {
        let path: Vec<String> = issue.path.split('.').map(str::to_string).collect();
        ConfigError::new(format!("{}: {} = {}: {}; allowed: {}", where_(&path), issue.path, issue.value, issue.problem, issue.allowed))
    })?;
    Ok(value)
}

/// The values that depend on another key. Every field an LTE cell leaves out takes its LTE
/// default (radio.rs), so the schema's own defaults (a mmWave gNB's) apply to mmWave cells
/// only. A flow with a TCP profile takes the profile's settings (profile.rs) over what the
/// file wrote, so that `--set flows.0.tcp_profile=...` on a shipped scenario, which spells its
/// TCP settings out, still runs that TCP; only a key set by an override beats the profile.
fn fill_defaults(doc: &mut DocumentMut, overrides: &[Override]) {
    if let Some(Item::ArrayOfTables(cells)) = doc.get_mut("cells") {
        for cell in cells.iter_mut().filter(|cell| cell.get("kind").and_then(Item::as_str) == Some("lte")) {
            fill_missing(cell, crate::radio::LTE_CELL_DEFAULTS);
        }
    }
    if let Some(Item::ArrayOfTables(flows)) = doc.get_mut("flows") {
        for (i, flow) in flows.iter_mut().enumerate() {
            // An unknown profile name is left to deserialisation, which names the allowed ones.
            let profile = flow
                .get("tcp_profile")
                .and_then(Item::as_str)
                .and_then(|name| TcpProfile::deserialize(StrDeserializer::<serde::de::value::Error>::new(name)).ok());
            let Some(profile) = profile else { continue };
            let overridden = |key: &str| {
                overrides.iter().any(|o| {
                    o.path.len() == 3 && o.path[0] == "flows" && (o.path[1] == i.to_string() || o.path[1] == EVERY) && o.path[2] == key
                })
            };
            for (key, value) in profile.flow_settings() {
                if !overridden(key) {
                    flow.insert(key, Item::Value(file_value(*value)));
                }
            }
        }
    }
}

fn fill_missing(table: &mut Table, defaults: &[(&str, FileDefault)]) {
    for (key, value) in defaults {
        if !table.contains_key(key) {
            table.insert(key, Item::Value(file_value(*value)));
        }
    }
}

fn file_value(value: FileDefault) -> Value {
    match value {
        FileDefault::Number(x) => Value::from(x),
        FileDefault::Whole(n) => Value::from(n),
        FileDefault::Text(t) => Value::from(t),
        FileDefault::Flag(b) => Value::from(b),
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory, not a file".to_string(),
        _ => e.to_string(),
    }
}

fn parse_override(text: &str) -> Result<Override, ConfigError> {
    let bad = |why: &str| ConfigError::new(format!("--set {text}: {why}; expected KEY=VALUE with a dotted key such as flows.0.cc=newreno"));
    let (key, raw) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
    let path: Vec<String> = key.trim().split('.').map(|s| s.trim().to_string()).collect();
    if path.iter().any(String::is_empty) {
        return Err(bad("empty key"));
    }
    Ok(Override { path, raw: raw.trim().to_string() })
}

/// A TOML literal when the text is one (numbers, booleans, quoted strings, arrays),
/// otherwise the text as a string, so `--set flows.0.cc=newreno` needs no quotes.
fn override_value(raw: &str) -> Value {
    raw.parse::<Value>().unwrap_or_else(|_| Value::from(raw))
}

fn apply(doc: &mut DocumentMut, o: &Override) -> Result<(), ConfigError> {
    set_in_table(doc.as_table_mut(), &o.path, override_value(&o.raw), 0)
        .map_err(|why| ConfigError::new(format!("--set {}={}: {why}", o.path.join("."), o.raw)))
}

/// The list index of an override that means every entry of a list of tables.
const EVERY: &str = "*";

/// Sets `path` (starting at `path[depth]`) below `table`. Missing tables are created,
/// so that an unknown key is reported by the schema with the list of allowed keys.
fn set_in_table(table: &mut Table, path: &[String], value: Value, depth: usize) -> Result<(), String> {
    let key = path[depth].as_str();
    let here = || path[..=depth].join(".");
    if depth + 1 == path.len() {
        table.insert(key, Item::Value(value));
        return Ok(());
    }
    let next = path[depth + 1].as_str();
    match table.entry(key).or_insert_with(toml_edit::table) {
        Item::Table(inner) => set_in_table(inner, path, value, depth + 1),
        Item::ArrayOfTables(list) => {
            if depth + 2 == path.len() {
                return Err(format!("{}.{next} is a table; set its fields one by one", here()));
            }
            // `*` sets the field in every entry of the list (`flows.*.cc=bbr`).
            if next == EVERY {
                return list.iter_mut().try_for_each(|entry| set_in_table(entry, path, value.clone(), depth + 2));
            }
            let index = parse_index(next, list.len()).map_err(|why| format!("{}: {why}", here()))?;
            set_in_table(list.get_mut(index).expect("index checked"), path, value, depth + 2)
        }
        Item::Value(inner) => set_in_value(inner, path, value, depth + 1),
        _ => Err(format!("{} has no field {next:?}", here())),
    }
}

/// Sets `path` (from `path[depth]`, a list index or a key) inside an inline value: the
/// point of a route (`ues.0.route_m.0.0`), a field of an inline table.
fn set_in_value(inner: &mut Value, path: &[String], value: Value, depth: usize) -> Result<(), String> {
    let key = path[depth].as_str();
    let here = || path[..depth].join(".");
    let last = depth + 1 == path.len();
    match inner {
        Value::Array(list) => {
            let index = parse_index(key, list.len()).map_err(|why| format!("{}: {why}", here()))?;
            if last {
                list.replace(index, value);
                return Ok(());
            }
            set_in_value(list.get_mut(index).expect("index checked"), path, value, depth + 1)
        }
        Value::InlineTable(table) if last => {
            table.insert(key, value);
            Ok(())
        }
        Value::InlineTable(table) => match table.get_mut(key) {
            Some(field) => set_in_value(field, path, value, depth + 1),
            None => Err(format!("{} has no field {key:?}", here())),
        },
        _ => Err(format!("{} has no field {key:?}", here())),
    }
}

fn parse_index(segment: &str, len: usize) -> Result<usize, String> {
    let index: usize = segment.parse().map_err(|_| format!("expected a list index 0..{len}, got {segment:?}"))?;
    if index >= len {
        return Err(format!("index {index} is out of range; the list has {len} entries"));
    }
    Ok(index)
}

fn path_segments(path: &serde_path_to_error::Path) -> Vec<String> {
    path.iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Map { key } => Some(key.clone()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect()
}

/// serde's wording, with Rust type names replaced by what a user writes.
fn plain_message(message: &str) -> String {
    one_line(message)
        .replace("expected f64", "expected a number")
        .replace("expected u64", "expected a whole number >= 0")
        .replace("expected u32", "expected a whole number >= 0")
        .replace("expected a boolean", "expected true or false")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Line of `path` in the original file: the value when it is written there,
/// otherwise the nearest enclosing table that is.
fn find_line(doc: &ImDocument<String>, text: &str, path: &[String]) -> Option<usize> {
    span_in_table(doc.as_table(), path).map(|offset| line_of(text, offset))
}

fn span_in_table(table: &Table, path: &[String]) -> Option<usize> {
    let here = table.span().map(|s| s.start);
    let Some((key, rest)) = path.split_first() else { return here };
    let Some(item) = table.get(key) else { return here };
    let found = match (item, rest.split_first()) {
        (_, None) => item.span().map(|s| s.start),
        (Item::Table(inner), Some(_)) => span_in_table(inner, rest),
        (Item::ArrayOfTables(list), Some((index, rest))) => list.get(index.parse().ok()?).and_then(|t| span_in_table(t, rest)),
        (Item::Value(Value::Array(list)), Some((index, _))) => list.get(index.parse().ok()?).and_then(|v| v.span()).map(|s| s.start),
        (Item::Value(Value::InlineTable(inner)), Some((k, _))) => inner.get(k).and_then(|v| v.span()).map(|s| s.start),
        _ => item.span().map(|s| s.start),
    };
    found.or(here)
}
