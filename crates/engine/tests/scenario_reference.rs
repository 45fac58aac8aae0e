//! docs/scenario-reference.md must list exactly the fields of the schema.

use std::collections::BTreeSet;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap()
}

/// Dotted key paths of a TOML value, list indices written as `N`.
fn paths(prefix: &str, value: &toml::Value, out: &mut BTreeSet<String>) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                paths(&p, v, out);
            }
        }
        // An empty list has no fields to check; tests/data/all-fields.toml fills every list.
        toml::Value::Array(items) if items.is_empty() => {}
        toml::Value::Array(items) if items.iter().all(|i| i.is_table()) => {
            for item in items {
                paths(&format!("{prefix}.N"), item, out);
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

#[test]
fn reference_lists_every_schema_field_and_nothing_else() {
    let mut schema = BTreeSet::new();
    let shipped = std::fs::read_dir(repo().join("python/millinet/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"));
    for path in shipped.chain([repo().join("crates/engine/tests/data/all-fields.toml")]) {
        let resolved = millinet_engine::resolve_file(&path, &[], None).unwrap();
        paths("", &toml::from_str(&resolved).unwrap(), &mut schema);
    }
    let doc = std::fs::read_to_string(repo().join("docs/scenario-reference.md")).unwrap();
    let documented: BTreeSet<String> =
        doc.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).map(str::to_string).collect();
    // Keys a scenario may write but the resolved scenario spells out instead of repeating:
    // a TCP profile becomes the values it set (scenario::profile).
    schema.insert("flows.N.tcp_profile".to_string());
    let missing: Vec<_> = schema.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&schema).collect();
    assert!(missing.is_empty(), "fields missing from docs/scenario-reference.md: {missing:?}");
    assert!(stale.is_empty(), "docs/scenario-reference.md lists keys the schema lacks: {stale:?}");
}
