//! Messages for people: every error is one line, and a word (a path, a name, a value) too long
//! to read is shortened. The CLI prints them this way, and the Python package raises them.

/// Input errors are one line whatever text they carry.
pub fn one_line(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join("; ")
}

/// Words (paths, names, values) longer than this many characters are echoed shortened.
const LONG_WORD_CHARS: usize = 200;
const SHOWN_WORD_CHARS: usize = 60;

/// A message with each word over LONG_WORD_CHARS characters cut to its first SHOWN_WORD_CHARS
/// and its length (`"bbbb"… (100000 characters)`, as the scenario parser shows them), so that a
/// 100,000-character argument or name is not echoed whole. (The scenario parser shortens the
/// values it quotes already; this covers every other echo.)
pub fn shorten_long_words(text: &str) -> String {
    let words: Vec<String> = text
        .split(' ')
        .map(|word| {
            // `key:`, `"value",`: the punctuation and quotes stay around the shortened word
            let body = word.trim_end_matches([':', ',', ';']);
            let tail = &word[body.len()..];
            let (quote, inner) = match body.strip_prefix('"') {
                Some(rest) => ("\"", rest.strip_suffix('"').unwrap_or(rest)),
                None => ("", body),
            };
            let count = inner.chars().count();
            if count <= LONG_WORD_CHARS {
                return word.to_string();
            }
            let start: String = inner.chars().take(SHOWN_WORD_CHARS).collect();
            format!("{quote}{start}{quote}… ({count} characters){tail}")
        })
        .collect();
    words.join(" ")
}
