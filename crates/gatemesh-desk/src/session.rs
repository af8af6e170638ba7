//! Who is signed in, for how long, and how hard guessing a PIN is: the sign-in rules, with
//! the time passed in ([`Clock`]) so tests can move it.

use std::sync::Arc;

/// Where the desk reads the time (ms since 1970): the system's, or a test's.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now_ms(&self) -> i64;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        gatemesh_wire::time::now_ms()
    }
}

pub(crate) fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// Wrong PINs in a row that lock a name until a manager unlocks it.
pub const LOCK_AFTER_FAILURES: u32 = 5;

/// How long the next try for a name waits after its `failures`-th wrong PIN in a row: 1 s,
/// then twice as long each time (1, 2, 4, 8 s) until the lock.
pub fn delay_after(failures: u32) -> u64 {
    match failures {
        0 => 0,
        n => 1000u64 << (n - 1).min(16),
    }
}

/// Someone signed in, and when they last did something.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub name: String,
    pub last_ms: i64,
}

impl Session {
    /// Whether `idle_min` minutes passed since the last command.
    pub fn expired(&self, now_ms: i64, idle_min: u32) -> bool {
        now_ms.saturating_sub(self.last_ms) >= i64::from(idle_min) * 60_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_until_the_lock() {
        let delays: Vec<u64> = (0..LOCK_AFTER_FAILURES).map(delay_after).collect();
        assert_eq!(delays, [0, 1000, 2000, 4000, 8000]);
    }

    #[test]
    fn a_session_expires_after_its_idle_minutes() {
        let s = Session {
            name: "Sam".into(),
            last_ms: 1_000_000,
        };
        assert!(!s.expired(1_000_000 + 15 * 60_000 - 1, 15));
        assert!(s.expired(1_000_000 + 15 * 60_000, 15));
    }
}
