//! The method lists on the drivers' `Socket` and `Context` pages. Those types are aliases
//! of this crate's generic ones, so each driver's page carries a written list of the
//! methods, each a link to its documentation further down the page; these functions give
//! the methods a page must list, and check a page against them.

/// The public methods of [`Socket`](crate::Socket): those written in its `impl` block
/// (read from this crate's source) and the option setters (from the options table the
/// setters are generated from).
pub fn socket_methods() -> Vec<&'static str> {
    let mut methods = impl_methods(include_str!("../lib.rs"), "impl<R: Runtime> Socket<R> {");
    methods.extend_from_slice(SETTERS);
    methods
}

/// The public methods of [`Context`](crate::Context), read from this crate's source.
pub fn context_methods() -> Vec<&'static str> {
    impl_methods(
        include_str!("../context.rs"),
        "impl<R: Runtime> Context<R> {",
    )
}

/// Panics unless `page` links every one of `methods` (`[..](#method.NAME)`, the anchor
/// rustdoc gives a method on the page) and links no other method.
pub fn assert_page_lists(page: &str, methods: &[&str]) {
    let linked: Vec<&str> = page
        .split("(#method.")
        .skip(1)
        .map(|rest| &rest[..rest.find(')').expect("a link's end")])
        .collect();
    let missing: Vec<&str> = methods
        .iter()
        .copied()
        .filter(|m| !linked.contains(m))
        .collect();
    let unknown: Vec<&str> = linked
        .iter()
        .copied()
        .filter(|l| !methods.contains(l))
        .collect();
    assert!(missing.is_empty(), "not listed on the page: {missing:?}");
    assert!(unknown.is_empty(), "listed but no such method: {unknown:?}");
}

/// The names of the `pub fn`s and `pub async fn`s directly in the block that starts with
/// `header` in `source`.
fn impl_methods(source: &'static str, header: &str) -> Vec<&'static str> {
    let start = source.find(header).expect("the impl block");
    let body = &source[start..];
    let body = &body[..body.find("\n}\n").expect("its end")];
    let methods: Vec<&str> = body
        .lines()
        .filter_map(|line| {
            let line = line.strip_prefix("    ")?;
            let rest = line
                .strip_prefix("pub fn ")
                .or_else(|| line.strip_prefix("pub async fn "))?;
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            Some(&rest[..end])
        })
        .collect();
    assert!(
        methods.len() >= 4,
        "only {methods:?} found: has the impl moved?"
    );
    methods
}

/// The setters' names, from the table `zmtp_driver::option_setters!` generates them from.
macro_rules! setter_names {
    ($(
        $(#[$doc:meta])*
        $field:ident, $with:ident, $set:ident, ($arg:ident : $ty:ty) => $value:expr, $applies:literal;
    )*) => {
        &[$(stringify!($set)),*]
    };
}

const SETTERS: &[&str] = zmtp_driver::__options_table!(setter_names);

#[cfg(test)]
mod tests {
    #[test]
    fn the_lists_are_found() {
        let socket = super::socket_methods();
        for m in [
            "new",
            "bind",
            "connect",
            "send",
            "recv",
            "close",
            "set_sndhwm",
        ] {
            assert!(socket.contains(&m), "{m} not in {socket:?}");
        }
        assert!(super::context_methods().contains(&"term"));
    }
}
