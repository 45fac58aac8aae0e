//! The scenario loader with `--set` overrides.

use millinet_scenario::load_text;

/// The input is a scenario file; its lines `#set KEY=VALUE` (TOML comments, so the file
/// stays a scenario) are also passed as `--set` overrides, in order, which lets the shipped
/// scenarios seed the corpus as they are. The loader must return a scenario or a
/// `ConfigError`, never panic; a scenario it accepts must print as TOML (`millinet show`)
/// that loads again to the same scenario.
pub fn scenario_load(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let overrides: Vec<String> = text.lines().filter_map(|l| l.strip_prefix("#set ")).map(str::to_string).collect();
    let Ok(scenario) = load_text(text, "fuzz.toml", &overrides, None) else { return };
    let resolved = toml::to_string(&scenario).unwrap_or_else(|e| panic!("a loaded scenario does not print as TOML: {e}"));
    let again =
        load_text(&resolved, "resolved.toml", &[], None).unwrap_or_else(|e| panic!("the resolved scenario does not load: {e}\n{resolved}"));
    let printed_again = toml::to_string(&again).expect("printed once already");
    assert_eq!(printed_again, resolved, "the resolved scenario changed when loaded again");
}
