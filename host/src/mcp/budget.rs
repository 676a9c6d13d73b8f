//! Result budgets: every tool returns at most `max_results` items and at most
//! `max_chars` characters of structured output, and says when it cut.

use serde::Serialize;

/// Default output budget in characters: about 5,000 tokens, enough for a
/// page of results while leaving most of an agent's context for its work.
pub const DEFAULT_MAX_CHARS: usize = 20_000;
/// Largest output budget a caller may ask for (about 50,000 tokens): beyond
/// that one answer would crowd out everything else in a typical context.
pub const MAX_MAX_CHARS: usize = 200_000;
/// Smallest output budget accepted: below it not even one result fits.
pub const MIN_MAX_CHARS: usize = 500;
/// Largest `max_results` any tool accepts.
pub const MAX_MAX_RESULTS: usize = 1_000;

/// Longest `search_text` pattern, in characters. A match lies within one
/// line, and 4,096 characters is longer than any line written by hand; a
/// longer pattern only costs matcher memory (a 10 MB literal took seconds
/// and gigabytes to compile).
pub const MAX_PATTERN_CHARS: usize = 4_096;

/// Longest symbol name `find_definitions` and `find_references` take, in
/// characters. The longest qualified names (`App\Http\Controllers\...::method`)
/// are a few hundred characters; 1,000 leaves room and stays far below
/// SQLite's limit on a `LIKE` pattern (50,000 bytes).
pub const MAX_SYMBOL_CHARS: usize = 1_000;

/// Longest natural-language text `semantic_search` and `query` take, in
/// characters: the same bound as a request given to `start_session`
/// (`code_intel_session::workflow::MAX_QUERY_CHARS`). The encoder reads the
/// first 512 tokens of it anyway.
pub const MAX_QUERY_TEXT_CHARS: usize = code_intel_session::workflow::MAX_QUERY_CHARS;

/// Refuses `value` when it has more than `limit` characters, naming the
/// argument, the limit and `remedy` (what to pass instead). Checked before
/// any work is done, so an oversized argument costs nothing but its parse.
///
/// # Errors
/// When `value` is longer than `limit` characters.
pub fn text_limit(argument: &'static str, value: &str, limit: usize, remedy: &str) -> Result<(), ArgError> {
    // Bytes bound characters from above: most values need no count.
    if value.len() <= limit {
        return Ok(());
    }
    let chars = value.chars().count();
    if chars <= limit {
        return Ok(());
    }
    Err(ArgError::new(argument, format!("is {chars} characters long; the limit is {limit}: {remedy}")))
}

/// An argument the caller got wrong: which one, and why.
#[derive(Debug)]
pub struct ArgError {
    pub argument: &'static str,
    pub message: String,
}

impl ArgError {
    pub fn new(argument: &'static str, message: impl Into<String>) -> Self {
        Self { argument, message: message.into() }
    }
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid argument `{}`: {}", self.argument, self.message)
    }
}

/// Validates `max_results` (default `default`).
///
/// # Errors
/// When the value is 0 or above [`MAX_MAX_RESULTS`].
pub fn max_results(value: Option<u32>, default: usize) -> Result<usize, ArgError> {
    let Some(v) = value else { return Ok(default) };
    let v = v as usize;
    if v == 0 || v > MAX_MAX_RESULTS {
        return Err(ArgError::new("max_results", format!("must be between 1 and {MAX_MAX_RESULTS}, got {v}")));
    }
    Ok(v)
}

/// Validates `max_chars`.
///
/// # Errors
/// When the value is outside [`MIN_MAX_CHARS`]..=[`MAX_MAX_CHARS`].
pub fn max_chars(value: Option<u32>) -> Result<usize, ArgError> {
    let Some(v) = value else { return Ok(DEFAULT_MAX_CHARS) };
    let v = v as usize;
    if !(MIN_MAX_CHARS..=MAX_MAX_CHARS).contains(&v) {
        return Err(ArgError::new("max_chars", format!("must be between {MIN_MAX_CHARS} and {MAX_MAX_CHARS}, got {v}")));
    }
    Ok(v)
}

/// Keeps the longest prefix of `items` whose JSON form fits in `budget`
/// characters (`reserved` already spent on the rest of the result). Returns
/// how many items were dropped. At least one item is kept when there is one,
/// cut down by `shrink` if it alone is too large.
pub fn fit<T: Serialize>(items: &mut Vec<T>, budget: usize, reserved: usize, shrink: impl Fn(&mut T, usize)) -> usize {
    let mut used = reserved;
    let mut keep = 0;
    for item in items.iter() {
        let size = json_len(item) + 1;
        if used + size > budget {
            break;
        }
        used += size;
        keep += 1;
    }
    if keep == 0 && !items.is_empty() {
        let room = budget.saturating_sub(reserved).max(MIN_MAX_CHARS / 2);
        shrink(&mut items[0], room);
        keep = 1;
    }
    let dropped = items.len() - keep;
    items.truncate(keep);
    dropped
}

/// Per-item caps tried on a nested list (a result's linked files), in
/// order, before [`fit`] drops whole items: eight links are the most a
/// result carries, one keeps the strongest tie.
pub const NESTED_CAPS: &[usize] = &[4, 2, 1, 0];

/// When `items` (plus `reserved`) exceed `budget`, shortens every item's
/// nested list to the first of [`NESTED_CAPS`] that makes them fit (or the
/// last). Returns the cap applied, `None` when nothing was cut. Whole items
/// are worth more than their extras: call this before [`fit`].
pub fn trim_nested<T: Serialize, U>(
    items: &mut [T],
    budget: usize,
    reserved: usize,
    nested: impl Fn(&mut T) -> &mut Vec<U>,
) -> Option<usize> {
    let size = |items: &[T]| reserved + items.iter().map(|i| json_len(i) + 1).sum::<usize>();
    if size(items) <= budget {
        return None;
    }
    let mut applied = None;
    for &cap in NESTED_CAPS {
        let mut cut = false;
        for item in items.iter_mut() {
            let list = nested(item);
            if list.len() > cap {
                list.truncate(cap);
                cut = true;
            }
        }
        if cut {
            applied = Some(cap);
        }
        if size(items) <= budget {
            break;
        }
    }
    applied
}

/// Length of a value's compact JSON form.
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

/// Cuts `text` to at most `max` characters on a line boundary when possible,
/// appending a marker saying how much was left out.
#[must_use]
pub fn clip_text(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(nl) = text[..end].rfind('\n')
        && nl > max / 2
    {
        end = nl + 1;
    }
    let omitted_lines = text[end..].lines().count();
    (format!("{}… [{omitted_lines} more lines cut by the output budget]", &text[..end]), true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn text_limits_count_characters_and_name_the_limit() {
        assert!(super::text_limit("symbol", &"é".repeat(10), 10, "x").is_ok(), "20 bytes, 10 characters");
        let e = super::text_limit("pattern", &"a".repeat(11), 10, "search for part of the line").unwrap_err();
        assert_eq!(e.to_string(), "invalid argument `pattern`: is 11 characters long; the limit is 10: search for part of the line");
    }

    use super::*;

    #[test]
    fn fit_keeps_a_prefix_within_budget() {
        let mut items: Vec<String> = (0..100).map(|i| format!("item number {i}")).collect();
        let dropped = fit(&mut items, 200, 20, |_, _| {});
        assert!(dropped > 0);
        assert!(items.iter().map(|s| json_len(s) + 1).sum::<usize>() + 20 <= 200);
        assert_eq!(items[0], "item number 0");
    }

    #[test]
    fn fit_shrinks_a_single_oversized_item() {
        let mut items = vec!["x".repeat(10_000)];
        let dropped = fit(&mut items, 1000, 0, |s, room| *s = s.chars().take(room).collect());
        assert_eq!(dropped, 0);
        assert!(items[0].len() <= 1000);
    }

    #[test]
    fn nested_lists_shrink_before_items_are_dropped() {
        #[derive(Serialize)]
        struct Item {
            name: String,
            links: Vec<String>,
        }
        let make = || -> Vec<Item> {
            (0..5).map(|i| Item { name: format!("item {i}"), links: (0..8).map(|j| format!("link {j} of item {i}")).collect() }).collect()
        };
        let mut items = make();
        assert_eq!(trim_nested(&mut items, 100_000, 0, |i| &mut i.links), None);
        assert_eq!(items[0].links.len(), 8);
        let full: usize = items.iter().map(|i| json_len(i) + 1).sum();
        let mut items = make();
        let cap = trim_nested(&mut items, full / 2, 0, |i| &mut i.links);
        assert!(cap.is_some_and(|c| c < 8), "{cap:?}");
        assert!(items.iter().all(|i| i.links.len() <= cap.unwrap()));
        assert_eq!(fit(&mut items, full / 2, 0, |_, _| {}), 0, "every item still fits");
        let mut items = make();
        assert_eq!(trim_nested(&mut items, 10, 0, |i| &mut i.links), Some(0));
    }

    #[test]
    fn limits_are_checked_with_named_arguments() {
        assert_eq!(max_results(None, 50).unwrap(), 50);
        assert!(max_results(Some(0), 50).unwrap_err().to_string().contains("`max_results`"));
        assert!(max_chars(Some(10)).unwrap_err().to_string().contains("`max_chars`"));
        let (clipped, cut) = clip_text(&"line\n".repeat(100), 50);
        assert!(cut && clipped.contains("more lines cut"));
    }
}
