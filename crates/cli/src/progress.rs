//! Progress on stderr, drawn only when stderr is a terminal: logs, pipes
//! and CI get no control characters. A hidden bar accepts every call and
//! draws nothing, so callers need no branch of their own.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Whether progress would be seen.
pub fn visible() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar of `len` steps drawn with `template` (indicatif's syntax).
pub fn bar(len: u64, template: &str) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    styled(ProgressBar::new(len), template)
}

/// A spinner drawn with `template`, ticking by itself every `tick`.
pub fn spinner(template: &str, tick: Duration) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let s = styled(ProgressBar::new_spinner(), template);
    s.enable_steady_tick(tick);
    s
}

fn styled(bar: ProgressBar, template: &str) -> ProgressBar {
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}
