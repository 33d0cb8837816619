//! A bench's knobs, read from the environment.

/// The whole number in the variable `name`, or `default` when it is unset or
/// not a number.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
