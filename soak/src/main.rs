//! temporary
mod relay;
fn main() {}
