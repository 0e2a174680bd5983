//! Validated values parsed at the API boundary: once a handler holds a
//! [`Username`] or a [`Password`], it meets the rules of `accounts.proto`.

use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret, SecretString};

use crate::error::{AccountsError, Result};

/// Fewest characters in a username.
pub const USERNAME_MIN: usize = 3;
/// Most characters in a username.
pub const USERNAME_MAX: usize = 20;
/// Fewest characters in a password.
pub const PASSWORD_MIN: usize = 8;
/// Most characters in a password (argon2 would take more, but nobody needs it).
pub const PASSWORD_MAX: usize = 128;
/// Most characters in a display name.
pub const DISPLAY_NAME_MAX: usize = 24;
/// Most characters in a guest device id.
pub const DEVICE_ID_MAX: usize = 128;
/// Most characters in a match or room id.
pub const MATCH_ID_MAX: usize = basra_records::wire::ID_MAX;

/// A login name: 3..20 characters of `A-Z a-z 0-9 _ .`, unique without regard
/// to case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    /// Checks `raw` against the username rules.
    pub fn parse(raw: &str) -> Result<Username> {
        let len = raw.chars().count();
        if len == 0 {
            return Err(AccountsError::invalid("username", "must not be empty"));
        }
        if !(USERNAME_MIN..=USERNAME_MAX).contains(&len) {
            return Err(AccountsError::invalid(
                "username",
                format!("must be {USERNAME_MIN} to {USERNAME_MAX} characters long, not {len}"),
            ));
        }
        if let Some(bad) = raw
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.'))
        {
            return Err(AccountsError::invalid(
                "username",
                format!("may contain only letters A-Z, digits, '_' and '.', not {bad:?}"),
            ));
        }
        Ok(Username(raw.to_owned()))
    }

    /// The username as the user typed it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The case-insensitive key: unique among accounts.
    pub fn key(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

/// A password of 8..128 characters, kept out of `Debug` output and logs.
#[derive(Debug, Clone)]
pub struct Password(SecretString);

impl Password {
    /// Checks `raw` against the password rules.
    pub fn parse(raw: &str) -> Result<Password> {
        let len = raw.chars().count();
        if len < PASSWORD_MIN {
            return Err(AccountsError::invalid(
                "password",
                format!("is too weak: use at least {PASSWORD_MIN} characters"),
            ));
        }
        if len > PASSWORD_MAX {
            return Err(AccountsError::invalid(
                "password",
                format!("must be at most {PASSWORD_MAX} characters long"),
            ));
        }
        Ok(Password(SecretString::from(raw)))
    }

    /// A password presented at Login: any non-empty one up to the maximum
    /// length (the strength rules apply when a password is chosen).
    pub fn presented(raw: &str) -> Result<Password> {
        if raw.is_empty() {
            return Err(AccountsError::invalid("password", "must not be empty"));
        }
        if raw.chars().count() > PASSWORD_MAX {
            return Err(AccountsError::invalid(
                "password",
                format!("must be at most {PASSWORD_MAX} characters long"),
            ));
        }
        Ok(Password(SecretString::from(raw)))
    }

    /// The password itself, for hashing.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

/// The name shown to other players: 1..24 characters once trimmed and with every run of
/// white space (any Unicode white space, tabs and line breaks included) made one space; no
/// other control characters and no invisible ones (format
/// characters such as zero-width spaces and bidirectional overrides, blank fillers); and
/// nothing that could pass for a name the server gives a seat — a bot ("Bot (hard)") or
/// an unnamed player ("Player 2"), see [`basra_proto::convert::is_reserved_name`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    /// Checks `raw` against the display name rules; answers the name as it is stored
    /// (trimmed, white space collapsed).
    pub fn parse(raw: &str) -> Result<DisplayName> {
        let raw = raw.trim();
        // White space (a tab, a line break) is collapsed below, not refused.
        if raw.chars().any(|c| c.is_control() && !c.is_whitespace()) {
            return Err(AccountsError::invalid(
                "display_name",
                "must not contain control characters",
            ));
        }
        if let Some(bad) = raw.chars().find(|c| is_invisible(*c)) {
            return Err(AccountsError::invalid(
                "display_name",
                format!(
                    "must not contain invisible characters (U+{:04X})",
                    u32::from(bad)
                ),
            ));
        }
        let name = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        let len = name.chars().count();
        if len == 0 {
            return Err(AccountsError::invalid("display_name", "must not be empty"));
        }
        if len > DISPLAY_NAME_MAX {
            return Err(AccountsError::invalid(
                "display_name",
                format!("must be at most {DISPLAY_NAME_MAX} characters long, not {len}"),
            ));
        }
        if basra_proto::convert::is_reserved_name(&name) {
            return Err(AccountsError::invalid(
                "display_name",
                format!(
                    "{name:?} could pass for a bot or an unnamed seat (\"Bot\", \"Player 2\"): \
                     choose another name"
                ),
            ));
        }
        Ok(DisplayName(name))
    }

    /// Parses `raw`, or answers `None` when it is empty (the caller then picks a
    /// default).
    pub fn parse_optional(raw: &str) -> Result<Option<DisplayName>> {
        if raw.trim().is_empty() {
            Ok(None)
        } else {
            DisplayName::parse(raw).map(Some)
        }
    }

    /// A guest's generated name such as "Guest 4821".
    pub fn random_guest() -> DisplayName {
        DisplayName(format!("Guest {:04}", rand::random_range(0..10_000u32)))
    }

    /// The display name of a new registered account: its username, when that is a valid
    /// display name (a username such as `bot_7` is not: the player must choose one).
    pub fn from_username(username: &Username) -> Result<DisplayName> {
        DisplayName::parse(username.as_str()).map_err(|_| {
            AccountsError::invalid(
                "display_name",
                format!(
                    "the username {:?} could pass for a bot or an unnamed seat: \
                     set a display name",
                    username.as_str()
                ),
            )
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Characters that show nothing: format characters (Unicode category Cf: soft hyphen,
/// zero-width spaces and joiners, bidirectional marks and overrides, tags) and the blank
/// fillers (Hangul fillers, the braille blank). A name made of them would look empty, or
/// like another name.
fn is_invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x115F
            | 0x1160
            | 0x17B4
            | 0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x2800
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF9..=0xFFFB
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// A guest's device identifier: 1..128 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceId(String);

impl DeviceId {
    /// Checks `raw` against the device id rules.
    pub fn parse(raw: &str) -> Result<DeviceId> {
        let len = raw.chars().count();
        if len == 0 {
            return Err(AccountsError::invalid("device_id", "must not be empty"));
        }
        if len > DEVICE_ID_MAX {
            return Err(AccountsError::invalid(
                "device_id",
                format!("must be at most {DEVICE_ID_MAX} characters long, not {len}"),
            ));
        }
        if raw.chars().any(char::is_control) {
            return Err(AccountsError::invalid(
                "device_id",
                "must not contain control characters",
            ));
        }
        Ok(DeviceId(raw.to_owned()))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks a match or room id: 1..64 printable ASCII characters without spaces (the
/// record's rule, [`basra_records::wire::opaque_id`]).
pub fn parse_opaque_id(field: &'static str, raw: &str) -> Result<String> {
    Ok(basra_records::wire::opaque_id(field, raw)?)
}

/// The current time, truncated to microseconds: what PostgreSQL stores, so both
/// stores compare and order times the same way.
pub fn now() -> DateTime<Utc> {
    truncate_micros(Utc::now())
}

pub use basra_records::wire::truncate_micros;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames() {
        for ok in ["abc", "Alice_92", "a.b.c", "x".repeat(20).as_str()] {
            assert!(Username::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "ab",
            &"x".repeat(21),
            "has space",
            "émile",
            "semi;colon",
        ] {
            assert!(Username::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Username::parse("AliCe").unwrap().key(), "alice");
    }

    #[test]
    fn passwords() {
        assert!(Password::parse("1234567").is_err());
        assert!(Password::parse("12345678").is_ok());
        assert!(Password::parse(&"p".repeat(128)).is_ok());
        assert!(Password::parse(&"p".repeat(129)).is_err());
        // Characters, not bytes.
        assert!(Password::parse(&"é".repeat(100)).is_ok());
        let debug = format!("{:?}", Password::parse("hunter2hunter2").unwrap());
        assert!(!debug.contains("hunter2"), "{debug}");
    }

    #[test]
    fn display_names_and_devices() {
        assert_eq!(DisplayName::parse("  Bob  ").unwrap().as_str(), "Bob");
        assert!(DisplayName::parse("   ").is_err());
        assert!(DisplayName::parse(&"n".repeat(25)).is_err());
        assert!(DisplayName::parse("a\u{7}b").is_err());
        assert!(DisplayName::parse("a\u{0}b").is_err());
        assert!(DisplayName::parse("a\u{85}b").is_ok(), "NEL is white space");
        assert_eq!(
            DisplayName::parse("Ana \t xyz").unwrap().as_str(),
            "Ana xyz",
            "a tab is white space: its run becomes one space"
        );
        assert_eq!(
            DisplayName::parse("Ana\r\n\u{b}\u{c}xyz\n")
                .unwrap()
                .as_str(),
            "Ana xyz",
            "line breaks, vertical tabs and form feeds too"
        );
        assert_eq!(
            DisplayName::parse(" Layla \u{3000}  Basra ")
                .unwrap()
                .as_str(),
            "Layla Basra",
            "white space runs become one space"
        );
        assert!(DisplayName::parse(&"n".repeat(24)).is_ok());
        for invisible in ["a\u{200B}b", "\u{202E}toB", "\u{3164}", "x\u{FEFF}"] {
            let err = DisplayName::parse(invisible).unwrap_err().to_string();
            assert!(err.contains("invisible"), "{invisible:?}: {err}");
        }
        for reserved in ["Bot", "Bot (hard)", "b0t", "Player 2"] {
            let err = DisplayName::parse(reserved).unwrap_err().to_string();
            assert!(err.contains("bot"), "{reserved:?}: {err}");
        }
        assert!(DisplayName::parse("Robot Rita").is_ok());
        // Arabic names, with and without a space, are names like any other.
        assert_eq!(DisplayName::parse("ليلى").unwrap().as_str(), "ليلى");
        assert_eq!(
            DisplayName::parse(" عمر  الشريف ").unwrap().as_str(),
            "عمر الشريف"
        );
        let bot_user = Username::parse("bot_7").unwrap();
        assert!(DisplayName::from_username(&bot_user).is_err());
        let alice = Username::parse("alice").unwrap();
        assert_eq!(
            DisplayName::from_username(&alice).unwrap().as_str(),
            "alice"
        );
        assert!(DisplayName::parse_optional("").unwrap().is_none());
        assert!(DisplayName::random_guest().as_str().starts_with("Guest "));
        assert!(DeviceId::parse("").is_err());
        assert!(DeviceId::parse(&"d".repeat(129)).is_err());
        assert!(DeviceId::parse(&"d".repeat(128)).is_ok());
        assert!(parse_opaque_id("match_id", "m 1").is_err());
        assert!(parse_opaque_id("match_id", "0192-abc").is_ok());
    }
}
