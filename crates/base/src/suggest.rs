//! Did-you-mean, one rule for every name a person types: a model or alias (`-m sonet`), a
//! provider (`antropic/…`), a settings key (`-c maxrounds=3`), a profile (`--profile cii`) and a
//! job line's field (`"promt"`).

/// The one of `candidates` that `word` most likely misspells, if any is close enough to be a
/// typo. Case, `-` and `_` do not count (`max_rounds`, `MaxRounds` for `max-rounds`); then
/// edits are counted with a swap of neighbours as one (`gtp`): one allowed in a word of up to
/// four letters, two in a longer one, so `llama3` is nobody's typo of `llamacpp`.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let bare = |s: &str| s.replace(['-', '_'], "").to_lowercase();
    let wanted = bare(word);
    let allowed = if wanted.chars().count() <= 4 { 1 } else { 2 };
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(&wanted, &bare(c)), c))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn typos_find_their_word_and_other_words_find_none() {
        let keys = [
            "max-rounds",
            "max-tokens",
            "model",
            "prompt",
            "ci",
            "sonnet",
            "gpt",
        ];
        for (typed, meant) in [
            ("maxrounds", Some("max-rounds")),
            ("max_rounds", Some("max-rounds")),
            ("Max-Round", Some("max-rounds")),
            ("promt", Some("prompt")),
            ("cii", Some("ci")),
            ("sonet", Some("sonnet")),
            ("gtp", Some("gpt")),
            ("llama3", None),
            ("zzzzzz", None),
            ("budget", None),
        ] {
            assert_eq!(closest(typed, keys), meant, "{typed}");
        }
    }
}
