//! Katakana loanwords read back as the English words a repository names
//! things with, for the keyword arm of a Japanese request.
//!
//! A Japanese developer writes the things of a codebase in katakana:
//! エッグ for `Egg`, リビジョン for `Revision`, ウォッチ for `Watch`,
//! ビジュアライザー for `Visualizer`. No fixed table ([`crate::glossary`])
//! can hold every project's nouns, but the project itself can: each katakana
//! word of the request is romanised and compared, sound by sound, with the
//! words of the repository's names and paths
//! ([`code_intel_store::Store::name_words`]); the words that read alike are
//! added to the keyword query. Compounds that match no single word are tried
//! as two (メールアドレス: `mail` + `address`).
//!
//! The comparison is a weighted edit distance between the romanised word and
//! the English spelling, both first brought to a common rough pronunciation
//! (`l` as `r`, `v` as `b`, `-tion` as `shon`, a vowel before a final `r` as
//! the long vowel mark ー, ...), where what Japanese adds or drops is cheap: a
//! vowel after a consonant (`tasuku`, task), a long vowel mark, a silent `e`.
//!
//! ```
//! use code_intel_search::loanwords::english_words;
//! let words: Vec<String> = ["egg", "eggs", "server", "revision", "schedule", "table", "node"].map(String::from).to_vec();
//! assert_eq!(english_words("エッグのリビジョン", &words), ["egg", "revision"]);
//! assert_eq!(english_words("スケジュール", &words), ["schedule"]);
//! assert!(english_words("カレーの作り方", &words).is_empty());
//! ```

/// Largest distance per letter of the English word for a match. Only the
/// nearest word is taken (the shorter of equals: `schedule`, not
/// `scheduler`); taking the next one too brought neighbours of the answer up.
const MAX_DISTANCE: f32 = 0.12;
/// Shortest romanised word tried (without long vowel marks): キー, バー and
/// オン read like too many words.
const MIN_ROMAJI: usize = 4;
/// Longest katakana word read (in characters; longer ones are no word a
/// repository names, and each is compared with every name word).
const MAX_KANA: usize = 24;
/// Katakana words read per request, at most.
const MAX_WORDS: usize = 16;

/// The English words of `words` (lower case) that the katakana words of
/// `query` read as, in order, without repeats.
#[must_use]
pub fn english_words(query: &str, words: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in located_words(query, words).into_iter().flat_map(|(_, _, found)| found) {
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// Each katakana word of `query` that reads as one of `words` (a compound
/// as two of them: メールアドレス `mail`, `address`), with where it stands:
/// its byte range in `query` and its English word or two, in order. What
/// [`english_words`] reads, located, so that the words of a request can
/// be read in sequence ([`crate::glossary::term_runs_with`]).
///
/// ```
/// use code_intel_search::loanwords::located_words;
/// let words: Vec<String> = ["board", "boards", "mail", "address"].map(String::from).to_vec();
/// let found = located_words("ボード一覧とメールアドレス", &words);
/// assert_eq!(found, [(0, 9, vec!["board".to_string()]), (18, 39, vec!["mail".to_string(), "address".to_string()])]);
/// ```
#[must_use]
pub fn located_words(query: &str, words: &[String]) -> Vec<(usize, usize, Vec<String>)> {
    let runs = katakana_runs(query);
    if runs.is_empty() {
        return Vec::new();
    }
    let candidates: Vec<(&str, Vec<u8>)> =
        words.iter().filter(|w| w.bytes().all(|b| b.is_ascii_lowercase())).map(|w| (w.as_str(), english_key(w))).collect();
    let mut out = Vec::new();
    for (start, run) in runs {
        let mut at = start;
        let mut parts = 0;
        for part in run.split('・') {
            let (from, to) = (at, at + part.len());
            at = to + '・'.len_utf8();
            if part.is_empty() || part.chars().count() > MAX_KANA {
                continue;
            }
            parts += 1;
            if parts > MAX_WORDS {
                break;
            }
            if let Some((_, found)) = best(part, &candidates) {
                out.push((from, to, vec![found.to_string()]));
            } else if let Some((first, second)) = split(part, &candidates) {
                out.push((from, to, vec![first.to_string(), second.to_string()]));
            }
        }
    }
    out
}

/// Whether `text` holds a katakana letter (what [`english_words`] reads).
#[must_use]
pub fn has_katakana(text: &str) -> bool {
    text.chars().any(is_katakana_letter)
}

fn is_katakana_letter(c: char) -> bool {
    matches!(c, '\u{30A1}'..='\u{30FA}')
}

/// Maximal runs of katakana (with ー and ・) in `text`, each with its byte
/// offset.
fn katakana_runs(text: &str) -> Vec<(usize, &str)> {
    let is_kana = |c: char| is_katakana_letter(c) || matches!(c, 'ー' | '・');
    let mut runs = Vec::new();
    let mut start = None;
    // Bounded: what a request holds beyond that is not read.
    for (at, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (is_kana(c), start) {
            (true, None) => start = Some(at),
            (false, Some(s)) => {
                runs.push((s, &text[s..at]));
                start = None;
                if runs.len() == MAX_WORDS {
                    break;
                }
            }
            _ => {}
        }
    }
    runs
}

/// The best-matching word for one katakana word, with its distance.
fn best<'a>(kana: &str, candidates: &[(&'a str, Vec<u8>)]) -> Option<(f32, &'a str)> {
    let romaji = romaji(kana)?;
    if romaji.bytes().filter(|b| *b != b'-').count() < MIN_ROMAJI {
        return None;
    }
    let key = japanese_key(&romaji);
    let scored: Vec<(f32, &str)> = candidates
        .iter()
        .filter(|(_, e)| e.len().abs_diff(key.len()) <= (key.len() / 2).max(3))
        .filter_map(|(w, e)| score(&key, e).map(|d| (d, *w)))
        .filter(|(d, _)| *d <= MAX_DISTANCE)
        .collect();
    scored.into_iter().min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.len().cmp(&b.1.len())).then_with(|| a.1.cmp(b.1)))
}

/// A compound read as two words (the pair with the least distance).
fn split<'a>(kana: &str, candidates: &[(&'a str, Vec<u8>)]) -> Option<(&'a str, &'a str)> {
    let chars: Vec<(usize, char)> = kana.char_indices().collect();
    let mut found: Option<(f32, &str, &str)> = None;
    for i in 2..chars.len().saturating_sub(1) {
        let (at, c) = chars[i];
        if c == 'ー' || is_small(c) || c == 'ッ' || chars[i - 1].1 == 'ッ' {
            continue;
        }
        let (Some((da, a)), Some((db, b))) = (best(&kana[..at], candidates), best(&kana[at..], candidates)) else { continue };
        if found.is_none_or(|(d, _, _)| da + db < d) {
            found = Some((da + db, a, b));
        }
    }
    found.map(|(_, a, b)| (a, b))
}

fn is_small(c: char) -> bool {
    matches!(c, 'ァ' | 'ィ' | 'ゥ' | 'ェ' | 'ォ' | 'ャ' | 'ュ' | 'ョ' | 'ヮ')
}

/// The katakana's Hepburn-like romanisation, leaning to English spelling
/// (ティ `ti`, ファ `fa`, ウォ `wo`); ッ doubles the next consonant and ー is
/// kept as `-`. `None` for a character it does not know.
fn romaji(kana: &str) -> Option<String> {
    let chars: Vec<char> = kana.chars().collect();
    let mut out = String::new();
    let mut double_next = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            'ッ' => {
                double_next = true;
                continue;
            }
            'ー' => {
                out.push('-');
                continue;
            }
            '・' => continue,
            _ => {}
        }
        let mut syllable = base(c)?.to_string();
        if let Some(&small) = chars.get(i)
            && is_small(small)
        {
            i += 1;
            let vowel = base(small)?.chars().last()?;
            let glide = matches!(small, 'ャ' | 'ュ' | 'ョ');
            syllable = match syllable.as_str() {
                "shi" | "chi" | "ji" if glide => format!("{}{}", &syllable[..syllable.len() - 1], &base(small)?[1..]),
                "shi" | "chi" | "ji" => format!("{}{vowel}", &syllable[..syllable.len() - 1]),
                _ if glide => format!("{}y{vowel}", &syllable[..syllable.len() - 1]),
                "fu" | "vu" => format!("{}{vowel}", &syllable[..1]),
                "tsu" => format!("ts{vowel}"),
                "u" => format!("w{vowel}"),
                "te" | "de" | "to" | "do" => format!("{}{vowel}", &syllable[..1]),
                "ku" | "gu" => format!("{}w{vowel}", &syllable[..1]),
                _ => format!("{}{vowel}", &syllable[..syllable.len() - 1]),
            };
        }
        if std::mem::take(&mut double_next) {
            match syllable.as_bytes()[0] {
                b'c' => out.push('t'),
                b'a' | b'e' | b'i' | b'o' | b'u' => {}
                first => out.push(first as char),
            }
        }
        out.push_str(&syllable);
    }
    Some(out)
}

/// One katakana's romanisation (small kana alone as their vowel).
fn base(c: char) -> Option<&'static str> {
    Some(match c {
        'ア' | 'ァ' => "a",
        'イ' | 'ィ' => "i",
        'ウ' | 'ゥ' => "u",
        'エ' | 'ェ' => "e",
        'オ' | 'ォ' | 'ヲ' => "o",
        'カ' => "ka",
        'キ' => "ki",
        'ク' => "ku",
        'ケ' => "ke",
        'コ' => "ko",
        'ガ' => "ga",
        'ギ' => "gi",
        'グ' => "gu",
        'ゲ' => "ge",
        'ゴ' => "go",
        'サ' => "sa",
        'シ' => "shi",
        'ス' => "su",
        'セ' => "se",
        'ソ' => "so",
        'ザ' => "za",
        'ジ' | 'ヂ' => "ji",
        'ズ' | 'ヅ' => "zu",
        'ゼ' => "ze",
        'ゾ' => "zo",
        'タ' => "ta",
        'チ' => "chi",
        'ツ' => "tsu",
        'テ' => "te",
        'ト' => "to",
        'ダ' => "da",
        'デ' => "de",
        'ド' => "do",
        'ナ' => "na",
        'ニ' => "ni",
        'ヌ' => "nu",
        'ネ' => "ne",
        'ノ' => "no",
        'ハ' => "ha",
        'ヒ' => "hi",
        'フ' => "fu",
        'ヘ' => "he",
        'ホ' => "ho",
        'バ' => "ba",
        'ビ' => "bi",
        'ブ' => "bu",
        'ベ' => "be",
        'ボ' => "bo",
        'パ' => "pa",
        'ピ' => "pi",
        'プ' => "pu",
        'ペ' => "pe",
        'ポ' => "po",
        'マ' => "ma",
        'ミ' => "mi",
        'ム' => "mu",
        'メ' => "me",
        'モ' => "mo",
        'ヤ' | 'ャ' => "ya",
        'ユ' | 'ュ' => "yu",
        'ヨ' | 'ョ' => "yo",
        'ラ' => "ra",
        'リ' => "ri",
        'ル' => "ru",
        'レ' => "re",
        'ロ' => "ro",
        'ワ' | 'ヮ' => "wa",
        'ン' => "n",
        'ヴ' => "vu",
        _ => return None,
    })
}

// Keys: lower-case letters plus `C` (ch), `S` (sh) and `R` (a long vowel:
// ー, or an English vowel's `r` before a consonant or the end).

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Doubled letters as one.
fn undouble(key: &mut Vec<u8>) {
    key.dedup();
}

/// A romanised word's key: `ch`/`sh` as `C`/`S`, `tsu` as `ts`, `v` as `b`,
/// doubled letters as one, ー as `R`.
fn japanese_key(romaji: &str) -> Vec<u8> {
    let s = romaji.replace("ch", "C").replace("sh", "S").replace("tsu", "ts").replace('v', "b").replace('-', "R");
    let mut key = s.into_bytes();
    undouble(&mut key);
    key
}

/// An English word's key, spelled roughly as it sounds: `site` -> `saite`,
/// `schedule` -> `skedure`, `station` -> `stashon`, `server` -> `sabaR`.
fn english_key(word: &str) -> Vec<u8> {
    let w = word.to_ascii_lowercase();
    let b = w.as_bytes();
    let consonant = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_alphabetic() && !is_vowel(*c));
    // Long i and y (site, slider, type), ou and ow before a consonant (mouse, download).
    let mut s = String::with_capacity(w.len() + 4);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let after_e = b.get(i + 2) == Some(&b'e') && (i + 3 == b.len() || consonant(i + 3));
        if (c == b'i' || c == b'y') && i > 0 && consonant(i - 1) && consonant(i + 1) && (after_e || (c == b'y' && i + 2 == b.len())) {
            s.push_str("ai");
        } else if c == b'o' && matches!(b.get(i + 1), Some(b'u' | b'w')) && consonant(i + 2) {
            s.push_str("au");
            i += 1;
        } else {
            s.push(c as char);
        }
        i += 1;
    }
    if let Some(rest) = s.strip_prefix("sch") {
        s = format!("sk{rest}");
    }
    if s.ends_with("ge") {
        s.truncate(s.len() - 2);
        s.push('j');
    }
    for (from, to) in [
        ("tion", "shon"),
        ("sion", "jon"),
        ("ture", "chur"),
        ("ph", "f"),
        ("ck", "k"),
        ("qu", "kw"),
        ("x", "ks"),
        ("th", "s"),
        ("wh", "w"),
        ("kn", "n"),
        ("ght", "t"),
        ("gh", ""),
        ("ch", "C"),
        ("sh", "S"),
    ] {
        s = s.replace(from, to);
    }
    let b = s.into_bytes();
    let mut key = Vec::with_capacity(b.len());
    for (i, &c) in b.iter().enumerate() {
        let next = b.get(i + 1).copied();
        let prev = i.checked_sub(1).map(|p| b[p]);
        key.push(match c {
            b'c' if matches!(next, Some(b'e' | b'i' | b'y')) => b's',
            b'c' | b'q' => b'k',
            b'y' if next.is_none() || prev.is_some_and(is_vowel) || next.is_some_and(|n| !is_vowel(n)) => b'i',
            b'l' => b'r',
            b'v' => b'b',
            other => other,
        });
    }
    undouble(&mut key);
    // A vowel's r before a consonant or at the end is a long vowel: er, ir, ur
    // as aー (server, sa-ba-), ar and or as themselves plus ー.
    let mut out = Vec::with_capacity(key.len());
    for (i, &c) in key.iter().enumerate() {
        let r_follows = key.get(i + 1) == Some(&b'r') && key.get(i + 2).is_none_or(|n| !is_vowel(*n));
        if c == b'r' && i > 0 && is_vowel(key[i - 1]) && key.get(i + 1).is_none_or(|n| !is_vowel(*n)) {
            out.push(b'R');
        } else if r_follows && matches!(c, b'e' | b'i' | b'u') && i > 0 {
            out.push(b'a');
        } else {
            out.push(c);
        }
    }
    // A first u before a consonant and a vowel sounds yu (user).
    if out.first() == Some(&b'u') && out.get(1).is_some_and(|c| !is_vowel(*c) && *c != b'R') && out.get(2).is_some_and(|c| is_vowel(*c)) {
        out.insert(0, b'y');
    }
    out
}

/// Sounds that Japanese renders alike.
fn similar(a: u8, b: u8) -> bool {
    let pair = |x: u8, y: u8| (a == x && b == y) || (a == y && b == x);
    [
        (b's', b'j'),
        (b'j', b'd'),
        (b's', b'z'),
        (b'j', b'z'),
        (b'g', b'j'),
        (b'f', b'h'),
        (b't', b'd'),
        (b'k', b'g'),
        (b'b', b'p'),
        (b'w', b'u'),
        (b'i', b'y'),
        (b't', b's'),
        (b'S', b's'),
        (b'C', b't'),
        (b'S', b'C'),
        (b'j', b'S'),
    ]
    .iter()
    .any(|(x, y)| pair(*x, *y))
}

/// Cost of reading Japanese sound `a` as English sound `b`.
fn substitute(a: u8, b: u8) -> f32 {
    if a == b {
        0.0
    } else if is_vowel(a) && is_vowel(b) {
        0.2
    } else if b == b'R' {
        if a == b'r' { 0.05 } else { f32::INFINITY }
    } else if a == b'R' {
        if b == b'r' {
            0.05
        } else if is_vowel(b) || b == b'y' {
            0.1
        } else {
            f32::INFINITY
        }
    } else if similar(a, b) {
        0.4
    } else {
        1.0
    }
}

/// Cost of a Japanese sound with no English counterpart: a vowel Japanese
/// adds after a consonant (`tasuku`), a long vowel mark.
fn drop_japanese(a: u8, prev: Option<u8>) -> f32 {
    match a {
        b'R' => 0.05,
        b'u' | b'o' if prev.is_some_and(|p| !is_vowel(p)) => 0.1,
        b'i' if matches!(prev, Some(b'S' | b'C' | b'j')) => 0.1,
        b'y' => 0.3,
        _ if is_vowel(a) => 0.4,
        b'h' if matches!(prev, Some(b's' | b'c')) => 0.2,
        _ => 1.0,
    }
}

/// Cost of an English letter Japanese does not say: a silent `e`, an `r`
/// after a vowel, an `h`.
fn drop_english(b: u8, prev: Option<u8>) -> f32 {
    match b {
        b'R' => 0.1,
        b'e' => 0.15,
        b'r' if prev.is_some_and(is_vowel) => 0.15,
        b'h' => 0.3,
        b'w' if prev.is_some_and(is_vowel) => 0.3,
        _ if is_vowel(b) => 0.35,
        _ => 1.0,
    }
}

/// Distance per English letter between two keys, `None` when their first
/// sounds differ too much to be one word.
fn score(japanese: &[u8], english: &[u8]) -> Option<f32> {
    let (&j0, &e0) = (japanese.first()?, english.first()?);
    if j0 != e0 && !(is_vowel(j0) && is_vowel(e0)) && substitute(j0, e0) > 0.4 {
        return None;
    }
    let (n, m) = (japanese.len(), english.len());
    let limit = MAX_DISTANCE * m as f32;
    let mut prev_row: Vec<f32> = Vec::with_capacity(m + 1);
    prev_row.push(0.0);
    for j in 1..=m {
        prev_row.push(prev_row[j - 1] + drop_english(english[j - 1], j.checked_sub(2).map(|p| english[p])));
    }
    let mut row = vec![0.0f32; m + 1];
    for i in 1..=n {
        let a = japanese[i - 1];
        let a_prev = i.checked_sub(2).map(|p| japanese[p]);
        row[0] = prev_row[0] + drop_japanese(a, a_prev);
        let mut lowest = row[0];
        for j in 1..=m {
            let b = english[j - 1];
            let b_prev = j.checked_sub(2).map(|p| english[p]);
            row[j] = (prev_row[j - 1] + substitute(a, b))
                .min(prev_row[j] + drop_japanese(a, a_prev))
                .min(row[j - 1] + drop_english(b, b_prev));
            lowest = lowest.min(row[j]);
        }
        if lowest > limit {
            return None;
        }
        std::mem::swap(&mut row, &mut prev_row);
    }
    Some(prev_row[m] / m as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_string()).collect()
    }

    #[test]
    fn romanisation_leans_to_english() {
        assert_eq!(romaji("エッグ").as_deref(), Some("eggu"));
        assert_eq!(romaji("ウォッチ").as_deref(), Some("wotchi"));
        assert_eq!(romaji("ティーカップ").as_deref(), Some("ti-kappu"));
        assert_eq!(romaji("ファイル").as_deref(), Some("fairu"));
        assert_eq!(romaji("ジェネレーター").as_deref(), Some("jenere-ta-"));
        assert_eq!(romaji("セッション").as_deref(), Some("sesshon"));
        assert_eq!(romaji("漢字"), None);
    }

    #[test]
    fn english_keys_sound_like_the_word() {
        let key = |w: &str| String::from_utf8(english_key(w)).unwrap();
        assert_eq!(key("server"), "saRbaR");
        assert_eq!(key("schedule"), "skedure");
        assert_eq!(key("site"), "saite");
        assert_eq!(key("navigation"), "nabigaSon");
        assert_eq!(key("check"), "Cek");
        assert_eq!(key("user"), "yusaR");
    }

    #[test]
    fn the_repository_words_a_katakana_word_reads_as() {
        let vocabulary = words(&[
            "backup", "button", "check", "console", "crossfade", "decorator", "egg", "footer", "generator", "header", "navigation",
            "network", "node", "panel", "parse", "playlist", "profile", "random", "reload", "request", "response", "revision",
            "schedule", "server", "session", "sidebar", "subuser", "task", "user", "visualizer", "watch", "address", "mail",
        ]);
        for (kana, english) in [
            ("バックアップ", "backup"),
            ("ボタン", "button"),
            ("チェック", "check"),
            ("コンソール", "console"),
            ("クロスフェード", "crossfade"),
            ("デコレーター", "decorator"),
            ("エッグ", "egg"),
            ("フッター", "footer"),
            ("ヘッダー", "header"),
            ("ナビゲーション", "navigation"),
            ("ネットワーク", "network"),
            ("ノード", "node"),
            ("プレイリスト", "playlist"),
            ("プロフィール", "profile"),
            ("ランダム", "random"),
            ("リロード", "reload"),
            ("リクエスト", "request"),
            ("レスポンス", "response"),
            ("リビジョン", "revision"),
            ("スケジュール", "schedule"),
            ("サーバー", "server"),
            ("セッション", "session"),
            ("サイドバー", "sidebar"),
            ("タスク", "task"),
            ("ユーザー", "user"),
            ("ビジュアライザー", "visualizer"),
            ("ウォッチ", "watch"),
        ] {
            assert_eq!(english_words(kana, &vocabulary).first().map(String::as_str), Some(english), "{kana}");
        }
        // A compound no word matches is read as two.
        assert_eq!(english_words("メールアドレス", &vocabulary), ["mail", "address"]);
        // Separated words, each on its own.
        assert_eq!(english_words("サーバー・ノード", &vocabulary), ["server", "node"]);
    }

    #[test]
    fn short_or_foreign_words_read_as_nothing() {
        let vocabulary = words(&["key", "bar", "one", "color", "killer", "core", "support", "meter"]);
        // Too short to tell apart: キー, バー, オン.
        assert!(english_words("キーとバーをオンにする", &vocabulary).is_empty());
        // Words the repository does not have read as nothing, not as the nearest word.
        assert!(english_words("カレーライス", &words(&["color", "core"])).is_empty());
        assert!(english_words("削除する", &vocabulary).is_empty());
        // A run longer than any name is not read (nor split thousands of ways).
        assert!(english_words(&"サーバー".repeat(2_500), &words(&["server"])).is_empty());
        assert_eq!(english_words(&"サーバー ".repeat(100), &words(&["server"])), ["server"]);
    }
}
