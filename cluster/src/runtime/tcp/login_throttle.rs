//! Failed-login throttling at the node's edge, where a client's IP address is known.
//!
//! Policy (per node; each node counts what it sees):
//! - A failed login (the metadata group answered `InvalidCredentials`) counts against
//!   the client's IP address and against the user name it tried.
//! - An address with [`LOGIN_FAILURES_PER_ADDRESS_MAX`] failures within the last
//!   [`LOGIN_FAILURE_WINDOW_MS`], or a user name with [`LOGIN_FAILURES_PER_USER_MAX`],
//!   has its next logins refused `Throttled` at once, by the node, without a
//!   replicated op, until the window that holds its failures has passed.
//! - A successful login does not reset anything: an attacker who also holds one valid
//!   account must not buy more guesses at another with it.
//!
//! What it costs the honest: a user whose name is under attack cannot log in on this
//! node for up to a minute (the usual trade of per-account throttling); logins with a
//! personal access token name no user and count only against the address.

use std::collections::BTreeMap;
use std::net::IpAddr;

/// Failed logins one IP address may have within a window before its logins are
/// refused: a person mistyping a password a few times never reaches it; a guesser is
/// held to 10 guesses a minute per node instead of hundreds a second.
pub const LOGIN_FAILURES_PER_ADDRESS_MAX: u32 = 10;

/// Failed logins one user name may have within a window, from every address together:
/// twice the per-address bound, so a user's own mistakes from two places are not
/// mistaken for an attack, while guessers spread over many addresses are still held
/// to 20 guesses a minute per node for one account.
pub const LOGIN_FAILURES_PER_USER_MAX: u32 = 20;

/// The window failures are counted over, in milliseconds: one minute.
pub const LOGIN_FAILURE_WINDOW_MS: u64 = 60_000;

/// Addresses and user names tracked at once; past it the oldest windows are dropped
/// (which forgets some failures, never refuses an honest login). Bounds what a spray
/// of names or addresses can make the node hold: about 100 bytes each.
pub const LOGIN_THROTTLE_ENTRIES_MAX: usize = 16_384;

/// Failures counted in one window.
#[derive(Clone, Copy, Debug)]
struct Window {
    started_ms: u64,
    failures: u32,
}

/// A key's windows, bounded in number.
#[derive(Debug)]
struct Windows<K: Ord + Clone> {
    windows: BTreeMap<K, Window>,
}

impl<K: Ord + Clone> Default for Windows<K> {
    fn default() -> Self {
        Self {
            windows: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Clone> Windows<K> {
    fn failures(&self, key: &K, now_ms: u64) -> u32 {
        self.windows
            .get(key)
            .filter(|window| now_ms.saturating_sub(window.started_ms) < LOGIN_FAILURE_WINDOW_MS)
            .map_or(0, |window| window.failures)
    }

    fn fail(&mut self, key: K, now_ms: u64) {
        if !self.windows.contains_key(&key) && self.windows.len() >= LOGIN_THROTTLE_ENTRIES_MAX {
            self.windows
                .retain(|_, window| now_ms.saturating_sub(window.started_ms) < LOGIN_FAILURE_WINDOW_MS);
            if self.windows.len() >= LOGIN_THROTTLE_ENTRIES_MAX {
                let oldest = self
                    .windows
                    .iter()
                    .min_by_key(|(_, window)| window.started_ms)
                    .map(|(key, _)| key.clone());
                if let Some(oldest) = oldest {
                    self.windows.remove(&oldest);
                }
            }
        }
        let window = self.windows.entry(key).or_insert(Window {
            started_ms: now_ms,
            failures: 0,
        });
        if now_ms.saturating_sub(window.started_ms) >= LOGIN_FAILURE_WINDOW_MS {
            *window = Window {
                started_ms: now_ms,
                failures: 0,
            };
        }
        window.failures = window.failures.saturating_add(1);
    }
}

/// The node's failed-login counts.
#[derive(Debug, Default)]
pub struct LoginThrottle {
    addresses: Windows<IpAddr>,
    users: Windows<String>,
}

impl LoginThrottle {
    /// Whether a login from `address` naming `user` (`None`: a token login) is to be
    /// refused now.
    pub fn throttled(&self, address: IpAddr, user: Option<&str>, now_ms: u64) -> bool {
        self.addresses.failures(&address, now_ms) >= LOGIN_FAILURES_PER_ADDRESS_MAX
            || user.is_some_and(|user| self.users.failures(&user.to_owned(), now_ms) >= LOGIN_FAILURES_PER_USER_MAX)
    }

    /// Count a failed login from `address` naming `user`.
    pub fn failed(&mut self, address: IpAddr, user: Option<&str>, now_ms: u64) {
        self.addresses.fail(address, now_ms);
        if let Some(user) = user {
            self.users.fail(user.to_owned(), now_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn an_address_that_keeps_failing_is_held_off_for_a_window_and_then_let_back() {
        let mut throttle = LoginThrottle::default();
        for attempt in 0..LOGIN_FAILURES_PER_ADDRESS_MAX {
            assert!(!throttle.throttled(ip(1), Some("root"), 1_000), "attempt {attempt}");
            throttle.failed(ip(1), Some(&format!("user{attempt}")), 1_000);
        }
        assert!(throttle.throttled(ip(1), Some("anyone"), 1_000));
        assert!(
            !throttle.throttled(ip(2), Some("root"), 1_000),
            "other addresses are not held off"
        );
        assert!(!throttle.throttled(ip(1), None, 1_000 + LOGIN_FAILURE_WINDOW_MS));
    }

    #[test]
    fn a_user_guessed_at_from_many_addresses_is_held_off_on_every_address() {
        let mut throttle = LoginThrottle::default();
        for attempt in 0..LOGIN_FAILURES_PER_USER_MAX {
            let address = ip(u8::try_from(attempt).expect("small"));
            assert!(!throttle.throttled(address, Some("root"), 5));
            throttle.failed(address, Some("root"), 5);
        }
        assert!(
            throttle.throttled(ip(200), Some("root"), 5),
            "root is held off from a new address"
        );
        assert!(!throttle.throttled(ip(200), Some("alice"), 5), "other users are not");
        assert!(!throttle.throttled(ip(200), None, 5), "a token login names no user");
    }

    #[test]
    fn a_spray_of_names_is_bounded_in_memory_and_forgets_only_the_oldest() {
        let mut throttle = LoginThrottle::default();
        for name in 0..LOGIN_THROTTLE_ENTRIES_MAX + 10 {
            throttle.failed(ip(1), Some(&format!("name{name}")), name as u64);
        }
        assert_eq!(throttle.users.windows.len(), LOGIN_THROTTLE_ENTRIES_MAX);
        assert!(!throttle.users.windows.contains_key("name0"));
        assert!(
            throttle
                .users
                .windows
                .contains_key(&format!("name{}", LOGIN_THROTTLE_ENTRIES_MAX + 9))
        );
    }
}
