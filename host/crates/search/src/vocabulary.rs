//! Does a repository know a request's words? The vocabulary half of the
//! confidence judgement of [`crate::hybrid`] (and of organisation-wide
//! search, which asks its own store): a request most of whose words no
//! chunk holds and that are no words of a language either is gibberish
//! (hashes, keyboard mashing); one whose words the repository uses is about
//! it even when no chunk holds them all; everyday talk is answered only
//! where the repository speaks its language. How a word is looked up is
//! the caller's: the local index's full text or the shared store's.

/// English words of requests about anything (beyond the stop words):
/// knowing them says nothing of what a repository is about.
pub const COMMON_WORDS: &[&str] = &[
    "able", "after", "again", "all", "already", "always", "another", "anything", "around", "ask", "away", "back", "because",
    "before", "best", "better", "big", "both", "bring", "call", "come", "day", "days", "different", "done", "each", "enough",
    "even", "ever", "every", "far", "feel", "few", "find", "first", "found", "get", "gets", "getting", "give", "goes", "going",
    "gone", "good", "got", "great", "had", "has", "have", "having", "help", "her", "here", "him", "his", "hour", "hours", "just",
    "keep", "keeps", "kind", "know", "last", "least", "less", "let", "like", "little", "long", "look", "lot", "lots", "made",
    "make", "makes", "many", "may", "might", "more", "most", "much", "must", "near", "never", "next", "nice", "not", "nothing",
    "off", "often", "old", "once", "one", "only", "other", "out", "over", "own", "people", "place", "put", "quite", "really",
    "same", "say", "see", "seem", "seems", "she", "since", "something", "still", "such", "sure", "take", "tell", "thing",
    "things", "think", "those", "though", "three", "through", "today", "together", "tomorrow", "too", "two", "under", "until",
    "use", "used", "very", "way", "ways", "week", "well", "went", "whole", "whose", "without", "won", "year", "years", "yet",
];

/// Known words that make a request [`Vocabulary::familiar`].
pub const FAMILIAR_WORDS: usize = 3;

/// How much of a query's vocabulary the index knows, for the gibberish
/// gate (see [`vocabulary`]).
#[derive(Clone, Debug, Default)]
pub struct Vocabulary {
    /// Plain ASCII words found nowhere in the index.
    pub unknown: usize,
    /// Of the [`Vocabulary::unknown`] words, those that are no word of a
    /// language either ([`is_word`]): all of them when there is no
    /// dictionary to ask.
    pub nonwords: usize,
    /// Plain ASCII words, plus Japanese software vocabulary ([`crate::glossary`]).
    pub total: usize,
    /// The query holds CJK text.
    pub cjk: bool,
    /// Words known: ASCII words in the index, vocabulary terms, and CJK words
    /// found in the index.
    pub known: usize,
    /// Of the known words, vocabulary terms that are everyday words too
    /// ([`crate::glossary::software_terms`]).
    pub everyday: usize,
    /// Plain ASCII words that are not [`COMMON_WORDS`]: what the request
    /// is about ("songs", "artist"; not "many", "have").
    pub content: usize,
    /// Of the [`Vocabulary::content`] words, those the index knows.
    pub content_known: usize,
    /// Those words.
    pub content_known_words: Vec<String>,
}

impl Vocabulary {
    /// Most words unknown; or a CJK request none of whose words the index or
    /// the software vocabulary knows, everyday words aside (Japanese words
    /// are rarely in English code, so one known word is enough there).
    ///
    /// Unknown words that are words of a language ("coupon", "warehouse")
    /// do not make a request gibberish: a small repository does not use
    /// most of the words of a real bug report. Such a request is judged
    /// like any other, by meaning and by topic.
    pub fn off_topic(&self) -> bool {
        (self.total > 0 && self.unknown * 2 > self.total && self.nonwords * 2 > self.unknown)
            || (self.cjk && self.known <= self.everyday)
    }

    /// At least [`FAMILIAR_WORDS`] words, and two thirds of them, known to
    /// the index: the request speaks the repository's language.
    pub fn familiar(&self) -> bool {
        let known = self.total.saturating_sub(self.unknown);
        known >= FAMILIAR_WORDS && known * 3 >= self.total * 2
    }

    /// The repository speaks the request's language: two of its content
    /// words at least, and two thirds of them, are in the index (for a
    /// CJK request: two known words that are not everyday vocabulary).
    /// What lets everyday talk through ("songs by the same artist play
    /// twice" to a music player).
    pub fn speaks(&self) -> bool {
        if self.cjk {
            return self.known.saturating_sub(self.everyday) >= 2;
        }
        self.content_known >= 2 && self.content_known * 3 >= self.content * 2
    }
}

/// The query's vocabulary against an index: its plain ASCII words (3+
/// characters, not stop words, not numbers) found or not (`found`: does
/// some chunk hold the word, by itself or by its stem); Japanese software
/// vocabulary ([`crate::glossary`]) counts as known; other CJK words (two
/// or more characters) are known when `found` says so.
///
/// # Errors
/// What `found` returns.
pub fn vocabulary<E>(
    query: &str,
    dictionary: Option<&code_intel_embed::Encoder>,
    mut found: impl FnMut(&str) -> Result<bool, E>,
) -> Result<Vocabulary, E> {
    use code_intel_store::tokenize::{MAX_QUERY_WORDS, has_cjk, is_stopword, query_words};
    let words: Vec<&str> = query
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3 && !w.bytes().all(|b| b.is_ascii_digit()) && !is_stopword(w))
        .take(MAX_QUERY_WORDS)
        .collect();
    let mut vocabulary = Vocabulary { cjk: has_cjk(query), ..Vocabulary::default() };
    for word in &words {
        let known = found(word)?;
        if known {
            vocabulary.known += 1;
        } else {
            vocabulary.unknown += 1;
            vocabulary.nonwords += usize::from(!dictionary.is_some_and(|d| is_word(d, word)));
        }
        if !COMMON_WORDS.contains(&word.to_ascii_lowercase().as_str()) {
            vocabulary.content += 1;
            vocabulary.content_known += usize::from(known);
            if known {
                vocabulary.content_known_words.push((*word).to_string());
            }
        }
    }
    let terms = crate::glossary::matched_terms(query);
    vocabulary.total = words.len() + terms;
    vocabulary.known += terms;
    vocabulary.everyday = terms - crate::glossary::software_terms(query).min(terms);
    if vocabulary.cjk {
        for word in query_words(query).into_iter().take(MAX_QUERY_WORDS) {
            if has_cjk(word) && word.chars().count() >= 2 && crate::glossary::matched_terms(word) == 0 && found(word)? {
                vocabulary.known += 1;
            }
        }
    }
    Ok(vocabulary)
}

/// Is `word` a word of a language the model was trained on: in its
/// vocabulary as a whole word ([`code_intel_embed::Encoder::is_whole_word`]),
/// itself or with an English inflection taken off (`attempts`, `charged`,
/// `guessing`, `damaging`, `stopped`, `replies`). Keyboard mashing, hashes
/// and made-up words are not.
pub fn is_word(dictionary: &code_intel_embed::Encoder, word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    if !lower.bytes().all(|b| b.is_ascii_lowercase()) || FILLER.contains(&lower.as_str()) {
        return false;
    }
    let known = |w: &str| w.len() >= 3 && dictionary.is_whole_word(w) == Some(true);
    if known(&lower) {
        return true;
    }
    for (suffix, replacements) in INFLECTIONS {
        if let Some(stem) = lower.strip_suffix(suffix) {
            if replacements.iter().any(|r| known(&format!("{stem}{r}"))) {
                return true;
            }
            // A doubled final consonant: `stopped`, `running`.
            let b = stem.as_bytes();
            if b.len() >= 3 && b[b.len() - 1] == b[b.len() - 2] && known(&stem[..stem.len() - 1]) {
                return true;
            }
        }
    }
    false
}

/// Placeholder text ("lorem ipsum dolor sit amet"), which a multilingual
/// vocabulary holds as words: in a request, and nowhere in the repository,
/// it asks for nothing.
const FILLER: &[&str] = &["lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing", "elit", "eiusmod", "tempor", "incididunt"];

/// English inflections and what may stand in their place on the stem.
const INFLECTIONS: &[(&str, &[&str])] = &[
    ("ies", &["y"]),
    ("es", &["", "e"]),
    ("s", &[""]),
    ("ied", &["y"]),
    ("ed", &["", "e"]),
    ("ing", &["", "e"]),
    ("ly", &[""]),
    ("er", &["", "e"]),
    ("ers", &["", "e"]),
];

/// Content words a request shares with the index ([`Vocabulary`]) at
/// most checked in pairs: 28 pairs of one full-text lookup each.
const TOGETHER_WORDS: usize = 8;

/// Does some chunk hold two of `words` together (`together`: does some
/// chunk hold both)? A repository's prose (translations, docs) knows many
/// everyday words one by one; a repository about a request's subject has
/// chunks that use its words together.
///
/// # Errors
/// What `together` returns.
pub fn known_together<E>(words: &[String], mut together: impl FnMut(&str, &str) -> Result<bool, E>) -> Result<bool, E> {
    let words = &words[..words.len().min(TOGETHER_WORDS)];
    for (i, a) in words.iter().enumerate() {
        for b in &words[i + 1..] {
            if together(a, b)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_judges_requests_by_their_words() {
        let v = |unknown, total, cjk, known| Vocabulary { unknown, nonwords: unknown, total, cjk, known, ..Vocabulary::default() };
        // "qwxz zzkv plorf": nothing known, no word.
        assert!(v(3, 3, false, 0).off_topic() && !v(3, 3, false, 0).familiar());
        // "a customer whose cart got charged shipping after a coupon" to a
        // small project: 4 of 6 unknown, but words of English.
        let words = Vocabulary { unknown: 4, nonwords: 1, total: 6, ..Vocabulary::default() };
        assert!(!words.off_topic() && !words.familiar());
        // "how do I repot an orchid without damaging the roots": 3 of 5 known.
        assert!(!v(2, 5, false, 3).off_topic() && !v(2, 5, false, 3).familiar());
        // A bug report in the code's words: 11 of 13 known.
        assert!(v(2, 13, false, 11).familiar());
        // "明日の東京の天気を教えてください": CJK, nothing known.
        assert!(v(0, 0, true, 0).off_topic());
        assert!(!v(0, 1, true, 1).off_topic(), "one software word is enough in Japanese");
        // "新幹線で東京から大阪まで何時間かかりますか": 時間 is an everyday word.
        assert!(Vocabulary { unknown: 0, total: 1, cjk: true, known: 1, everyday: 1, ..Vocabulary::default() }.off_topic());
    }

    #[test]
    fn a_repository_speaks_a_request_when_it_knows_its_content_words() {
        let v = |content, content_known| Vocabulary { content, content_known, ..Vocabulary::default() };
        // "songs by the same artist play twice" to a music player: songs, artist, play of 4.
        assert!(v(4, 3).speaks());
        // "how many moons does Jupiter have" to anything but a planetarium: moons at most.
        assert!(!v(2, 1).speaks());
        assert!(!v(1, 1).speaks(), "one word is not a language");
        // Japanese: two known words that are not everyday vocabulary.
        assert!(Vocabulary { cjk: true, known: 3, everyday: 1, ..Vocabulary::default() }.speaks());
        assert!(!Vocabulary { cjk: true, known: 2, everyday: 1, ..Vocabulary::default() }.speaks());
        assert!(COMMON_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
    }
}
