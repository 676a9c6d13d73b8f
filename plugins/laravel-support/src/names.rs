//! Laravel naming conventions: `product-card` -> `ProductCard`, `Product` ->
//! `products`, `category_id` -> `categories`.

/// `product-card` / `product_card` -> `ProductCard`.
///
/// ```
/// assert_eq!(code_intel_laravel_support::kebab_to_studly("product-card"), "ProductCard");
/// assert_eq!(code_intel_laravel_support::kebab_to_studly("cart_counter"), "CartCounter");
/// ```
#[must_use]
pub fn kebab_to_studly(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut chars = p.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

/// `OrderItem` -> `order_item` (Laravel's `Str::snake`).
///
/// ```
/// assert_eq!(code_intel_laravel_support::snake_case("OrderItem"), "order_item");
/// ```
#[must_use]
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// English plural of a lower-case word, as Laravel's inflector does for the
/// common cases (`category` -> `categories`, `box` -> `boxes`, `user` ->
/// `users`). Irregular nouns are not handled.
///
/// ```
/// use code_intel_laravel_support::pluralize;
/// assert_eq!(pluralize("category"), "categories");
/// assert_eq!(pluralize("order_item"), "order_items");
/// assert_eq!(pluralize("address"), "addresses");
/// assert_eq!(pluralize("day"), "days");
/// assert_eq!(pluralize("tag_idé"), "tag_idés");
/// assert_eq!(pluralize("journée"), "journées");
/// ```
#[must_use]
pub fn pluralize(word: &str) -> String {
    // `strip_suffix`, not `word[..len - 1]`: the last character may be
    // several bytes (`tag_idé`, found by the fuzzer, panicked).
    if let Some(stem) = word.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else if word.ends_with('s') || word.ends_with('x') || word.ends_with("ch") || word.ends_with("sh") {
        format!("{word}es")
    } else {
        format!("{word}s")
    }
}

/// The inverse of [`pluralize`] for the same regular cases.
///
/// ```
/// use code_intel_laravel_support::singularize;
/// assert_eq!(singularize("categories"), "category");
/// assert_eq!(singularize("products"), "product");
/// assert_eq!(singularize("addresses"), "address");
/// assert_eq!(singularize("status"), "status");
/// ```
#[must_use]
pub fn singularize(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = word.strip_suffix("sses").or_else(|| word.strip_suffix("xes")).or_else(|| word.strip_suffix("ches")).or_else(|| word.strip_suffix("shes")) {
        format!("{stem}{}", &word[stem.len()..word.len() - 2])
    } else if word.ends_with("us") || word.ends_with("ss") {
        word.to_string()
    } else if let Some(stem) = word.strip_suffix('s') {
        stem.to_string()
    } else {
        word.to_string()
    }
}
