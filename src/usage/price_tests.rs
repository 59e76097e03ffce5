//! Unit tests of the price table and its arithmetic.

use super::*;

fn tokens(input: u64, cache_read: u64, cache_write: u64, output: u64) -> Tokens {
    Tokens {
        input,
        cache_read,
        cache_write,
        output,
        ..Tokens::default()
    }
}

#[test]
fn the_embedded_table_is_valid_and_dated() {
    let prices = Prices::embedded();
    assert_eq!(prices.as_of, "2026-11-30");
    for alias in ["opus", "sonnet", "haiku", "fable", "gemini-3.1-pro"] {
        assert!(prices.resolve(alias).is_some(), "{alias}");
    }
}

#[test]
fn reported_ids_resolve_through_normalisation() {
    let prices = Prices::embedded();
    assert_eq!(
        prices.resolve("claude-opus-4-8[1m]"),
        Some("claude-opus-4-8")
    );
    assert_eq!(prices.resolve("Claude-Opus-4-8"), Some("claude-opus-4-8"));
    assert_eq!(
        prices.resolve("anthropic/claude-haiku-4-5"),
        Some("claude-haiku-4-5")
    );
    assert_eq!(
        prices.resolve("claude-haiku-4-5-20251001"),
        Some("claude-haiku-4-5")
    );
    assert_eq!(
        prices.resolve("claude-sonnet-4-5-2025-09-29"),
        Some("claude-sonnet-4-5")
    );
    assert_eq!(
        prices.resolve("gemini-3.1-pro-preview"),
        Some("gemini-3.1-pro")
    );
    assert_eq!(prices.resolve("claude-opus-4-9"), None);
    assert_eq!(prices.resolve("gpt-5.6-sol"), None);
    assert_eq!(prices.resolve("é-20250101"), None);
    assert_eq!(prices.resolve(""), None);
}

#[test]
fn costs_are_exact_to_the_cent() {
    let prices = Prices::embedded();
    let opus = ModelKey::new("claude-opus-4-8");
    // 1M input at $5, 2M cache reads at $0.50, 100k 5m writes at $6.25,
    // 200k output at $25: 5 + 1 + 0.625 + 5 = $11.625.
    let cost = prices.cost(&opus, &tokens(1_000_000, 2_000_000, 100_000, 200_000));
    assert_eq!(cost, Ok(11_625_000));
    // Of 100k writes, 40k kept for an hour at $10: 60k × 6.25 + 40k × 10 = 0.775.
    let mut hour = tokens(0, 0, 100_000, 0);
    hour.cache_write_1h = 40_000;
    assert_eq!(prices.cost(&opus, &hour), Ok(775_000));
    // Small counts round half up to the microdollar: 3 × $5/M = $0.000015.
    assert_eq!(prices.cost(&opus, &tokens(3, 0, 0, 0)), Ok(15));
    // 1 token of haiku input = $0.000001; 1 cache read = $0.0000001 → 0.
    let haiku = ModelKey::new("haiku");
    assert_eq!(prices.cost(&haiku, &tokens(1, 1, 0, 0)), Ok(1));
    // codex-style: $0.125 cached per M, 24448 cached + 315 input + 122 out
    // on gpt-5 = 0.003056 + 0.00039375 + 0.00122 = 0.00466975 → 0.00467.
    let gpt = ModelKey::new("gpt-5");
    assert_eq!(prices.cost(&gpt, &tokens(315, 24_448, 0, 122)), Ok(4_670));
}

#[test]
fn fast_mode_multiplies_and_unknown_multipliers_are_not_guessed() {
    let prices = Prices::embedded();
    let fast = ModelKey {
        id: "claude-opus-4-6".into(),
        fast: true,
    };
    assert_eq!(
        prices.cost(&fast, &tokens(1_000_000, 0, 0, 0)),
        Ok(30_000_000)
    );
    let fast_haiku = ModelKey {
        id: "haiku".into(),
        fast: true,
    };
    assert_eq!(
        prices.cost(&fast_haiku, &tokens(1, 0, 0, 0)),
        Err(Unpriced::NoFastPrice("haiku".into()))
    );
}

#[test]
fn unknown_models_and_missing_rates_have_no_cost() {
    let prices = Prices::embedded();
    assert_eq!(
        prices.cost(&ModelKey::new("kimi-k3"), &tokens(1, 0, 0, 1)),
        Err(Unpriced::UnknownModel("kimi-k3".into()))
    );
    // gpt-5 has no cache-write price: zero writes are fine, some are not.
    let gpt = ModelKey::new("gpt-5");
    assert!(prices.cost(&gpt, &tokens(1, 0, 0, 0)).is_ok());
    assert!(matches!(
        prices.cost(&gpt, &tokens(1, 0, 5, 0)),
        Err(Unpriced::MissingRate { .. })
    ));
}

#[test]
fn a_user_file_overrides_and_extends_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.json");
    std::fs::write(
        &path,
        r#"{"asOf":"2027-01-02","models":{"kimi-k3":{"aliases":["k3"],"input":0.6,"output":2.5,"cacheRead":0.15},
            "claude-opus-4-8":{"aliases":["opus"],"input":4,"output":20}}}"#,
    )
    .unwrap();
    let given = path.to_string_lossy().into_owned();
    let env = move |name: &str| (name == "OKSTRA_PRICES").then(|| given.clone());
    let prices = Prices::load(&env).unwrap();
    assert_eq!(prices.as_of, "2027-01-02");
    assert_eq!(
        prices.cost(
            &ModelKey::new("k3"),
            &tokens(1_000_000, 1_000_000, 0, 1_000_000)
        ),
        Ok(3_250_000)
    );
    assert_eq!(
        prices.cost(&ModelKey::new("opus"), &tokens(1_000_000, 0, 0, 0)),
        Ok(4_000_000)
    );
    // The user's entry replaces ours whole: no cache-read price any more.
    assert!(
        prices
            .cost(&ModelKey::new("opus"), &tokens(0, 1, 0, 0))
            .is_err()
    );
}

#[test]
fn bad_user_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.json");
    let given = path.to_string_lossy().into_owned();
    let env = move |name: &str| (name == "OKSTRA_PRICES").then(|| given.clone());
    assert!(matches!(Prices::load(&env), Err(Error::Read { .. })));
    std::fs::write(&path, r#"{"models":{"x":{"input":-1,"output":1}}}"#).unwrap();
    let err = Prices::load(&env).unwrap_err();
    assert!(err.to_string().contains("`-1`"), "{err}");
    std::fs::write(&path, r#"{"models":{"x":{"input":1}}}"#).unwrap();
    assert!(matches!(Prices::load(&env), Err(Error::Json { .. })));
    // No variable and no default file: the embedded table.
    let home = dir.path().to_string_lossy().into_owned();
    let none = move |name: &str| (name == "HOME").then(|| home.clone());
    assert_eq!(Prices::load(&none).unwrap().as_of, "2026-11-30");
}
