//! One setter per socket option, written once for every driver.
//!
//! [`option_setters!`](crate::option_setters) expands, inside a driver's `impl Socket`
//! block, to `set_sndhwm`, `set_linger`, `set_routing_id`, … : one method per field of
//! [`Options`](zmtp_proto::socket::Options), named as libzmq and pyzmq name the option,
//! each taking `&self` and returning `Result<(), Error>`. They come from the same table as
//! the `with_*` builder methods of `Options`, so both always cover the same options with
//! the same arguments. Each setter changes its one option through the socket's
//! `update_options(&self, impl FnOnce(&mut Options)) -> Result<(), Error>`, which every
//! driver provides: the options are changed and checked in one step under the socket's
//! lock, as `set_options` changes them.

/// Expands to one setter per socket option inside a driver's `impl Socket` block (see the
/// [module documentation](crate::setters)). The socket must have
/// `fn update_options(&self, change: impl FnOnce(&mut Options)) -> Result<(), Error>`.
#[macro_export]
macro_rules! option_setters {
    () => {
        $crate::__options_table!($crate::__option_setter_methods);
    };
}

/// The callback of [`option_setters!`]: the table's entries into methods.
#[doc(hidden)]
#[macro_export]
macro_rules! __option_setter_methods {
    ($(
        $(#[$doc:meta])*
        $field:ident, $with:ident, $set:ident, ($arg:ident : $ty:ty) => $value:expr, $applies:literal;
    )*) => {
        $(
            $(#[$doc])*
            #[doc = ""]
            #[doc = concat!(
                "Changes [`Options::", stringify!($field), "`] on this socket; it applies ",
                $applies, ". Fails with `Error::Options` (changing nothing) if the value is ",
                "invalid."
            )]
            pub fn $set(&self, $arg: $ty) -> ::core::result::Result<(), $crate::Error> {
                self.update_options(|options| options.$field = $value)
            }
        )*
    };
}
