//! The notification texts: a title and a body for each [`Notice`], in English and
//! Arabic, chosen by the device's locale (anything but Arabic gets English).
//!
//! The parameters (a player's display name, an event's name) are chosen by players or
//! operators, so before they enter a text they are:
//! - **cleaned**: control characters and every bidi control (LRM, RLM, ALM, the embeddings,
//!   overrides and isolates) are removed, so a name cannot reorder the text around it or
//!   close the isolate it is put in;
//! - **capped**: [`NAME_CAP`] characters for a name, [`EVENT_CAP`] for an event's name, the
//!   last one replaced by `…` when cut;
//! - **isolated**: wrapped in FIRST STRONG ISOLATE (U+2068) … POP DIRECTIONAL ISOLATE
//!   (U+2069), so a Latin name inside Arabic text (or an Arabic name ending in digits inside
//!   English text) keeps its own direction and does not drag the punctuation around it.
//!   Both locales isolate: an English text may carry an Arabic name.
//!
//! The Arabic sentences are built around nouns ("a friend request from …") so that they
//! read right whatever the gender of the player named or addressed.

/// The longest display name put in a text, in characters (accounts allow 24).
pub const NAME_CAP: usize = 32;
/// The longest event name put in a text, in characters.
pub const EVENT_CAP: usize = 48;

const FSI: char = '\u{2068}';
const PDI: char = '\u{2069}';
const ELLIPSIS: char = '…';

/// A language the texts are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Locale {
    /// English: the fallback for every locale not listed.
    En,
    /// Arabic (`ar`, `ar-EG`, `ar_SA`, …).
    Ar,
}

impl Locale {
    /// The locale for a device's BCP 47 or POSIX tag (`ar-EG`, `ar_EG.UTF-8`, `en-US`);
    /// English for any language without texts, and for an empty tag.
    pub fn from_tag(tag: &str) -> Locale {
        let language = tag
            .split(['-', '_', '.', '@'])
            .next()
            .unwrap_or_default()
            .trim();
        if language.eq_ignore_ascii_case("ar") {
            Locale::Ar
        } else {
            Locale::En
        }
    }

    /// The language subtag: `en`, `ar`.
    pub fn tag(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::Ar => "ar",
        }
    }
}

/// What a notification is about, without its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// Someone asked to be the player's friend.
    FriendRequest,
    /// Someone accepted the player's friend request.
    FriendAccepted,
    /// A friend invited the player to their room.
    RoomInvite,
    /// The player's match in an event is ready to be played.
    MatchReady,
    /// An event the player entered is about to start.
    EventStarting,
    /// The moderators have something to tell the player (a report handled, an action).
    Moderation,
}

impl NoticeKind {
    /// Every kind.
    pub const ALL: [NoticeKind; 6] = [
        NoticeKind::FriendRequest,
        NoticeKind::FriendAccepted,
        NoticeKind::RoomInvite,
        NoticeKind::MatchReady,
        NoticeKind::EventStarting,
        NoticeKind::Moderation,
    ];

    /// The name the app reads in the push's data (`kind`): `friend_request`,
    /// `friend_accepted`, `room_invite`, `match_ready`, `event_starting`, `moderation`.
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::FriendRequest => "friend_request",
            NoticeKind::FriendAccepted => "friend_accepted",
            NoticeKind::RoomInvite => "room_invite",
            NoticeKind::MatchReady => "match_ready",
            NoticeKind::EventStarting => "event_starting",
            NoticeKind::Moderation => "moderation",
        }
    }

    /// Whether it is worth waking the device at once (FCM priority HIGH, APNs priority
    /// 10): something the player can join only now. The others go at normal priority
    /// (FCM NORMAL, APNs 5), which the systems may batch to save power.
    pub fn urgent(self) -> bool {
        matches!(
            self,
            NoticeKind::RoomInvite | NoticeKind::MatchReady | NoticeKind::EventStarting
        )
    }
}

/// A notification with its parameters, as raw as the caller has them (cleaning, capping
/// and isolation happen in [`Notice::text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// `from` (a display name) asked to be the player's friend.
    FriendRequest {
        /// The asker's display name.
        from: String,
    },
    /// `by` accepted the player's friend request.
    FriendAccepted {
        /// The new friend's display name.
        by: String,
    },
    /// `from` invited the player to their room.
    RoomInvite {
        /// The inviter's display name.
        from: String,
    },
    /// The player's match in `event` is ready.
    MatchReady {
        /// The event's name.
        event: String,
    },
    /// `event` is about to start.
    EventStarting {
        /// The event's name.
        event: String,
    },
    /// The moderators have a notice for the player (what it says is read in the app).
    Moderation,
}

/// The text of one notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    /// The language it is in.
    pub locale: Locale,
    /// The title line.
    pub title: String,
    /// The text under the title, in the same language.
    pub body: String,
}

impl Notice {
    /// What it is about.
    pub fn kind(&self) -> NoticeKind {
        match self {
            Notice::FriendRequest { .. } => NoticeKind::FriendRequest,
            Notice::FriendAccepted { .. } => NoticeKind::FriendAccepted,
            Notice::RoomInvite { .. } => NoticeKind::RoomInvite,
            Notice::MatchReady { .. } => NoticeKind::MatchReady,
            Notice::EventStarting { .. } => NoticeKind::EventStarting,
            Notice::Moderation => NoticeKind::Moderation,
        }
    }

    /// Its title and body in `locale`.
    pub fn text(&self, locale: Locale) -> Text {
        let (title, body) = match (self, locale) {
            (Notice::FriendRequest { from }, Locale::En) => (
                "Friend request".to_owned(),
                format!("{} wants to be your friend.", name(from, locale)),
            ),
            (Notice::FriendRequest { from }, Locale::Ar) => (
                "طلب صداقة".to_owned(),
                format!("طلب صداقة جديد من {}.", name(from, locale)),
            ),
            (Notice::FriendAccepted { by }, Locale::En) => (
                "Friend request accepted".to_owned(),
                format!("{} accepted your friend request.", name(by, locale)),
            ),
            (Notice::FriendAccepted { by }, Locale::Ar) => (
                "تم قبول طلب الصداقة".to_owned(),
                format!("{} في قائمة أصدقائك الآن.", name(by, locale)),
            ),
            (Notice::RoomInvite { from }, Locale::En) => (
                "Invitation to play".to_owned(),
                format!("{} invites you to a game of Basra.", name(from, locale)),
            ),
            (Notice::RoomInvite { from }, Locale::Ar) => (
                "دعوة للعب".to_owned(),
                format!("دعوة من {} إلى لعبة بصرة.", name(from, locale)),
            ),
            (Notice::MatchReady { event }, Locale::En) => (
                "Your match is ready".to_owned(),
                format!(
                    "Your match in {} is ready. Time to play!",
                    event_name(event, locale)
                ),
            ),
            (Notice::MatchReady { event }, Locale::Ar) => (
                "مباراتك جاهزة".to_owned(),
                format!(
                    "مباراتك في {} جاهزة. حان وقت اللعب!",
                    event_name(event, locale)
                ),
            ),
            (Notice::EventStarting { event }, Locale::En) => (
                "Starting soon".to_owned(),
                format!("{} is about to start.", event_name(event, locale)),
            ),
            (Notice::EventStarting { event }, Locale::Ar) => (
                "اقترب الموعد".to_owned(),
                format!("اقترب موعد {}.", event_name(event, locale)),
            ),
            (Notice::Moderation, Locale::En) => (
                "Notice from the moderators".to_owned(),
                "You have a new notice from the Basra moderators.".to_owned(),
            ),
            (Notice::Moderation, Locale::Ar) => (
                "إشعار من المشرفين".to_owned(),
                "لديك إشعار جديد من مشرفي بصرة.".to_owned(),
            ),
        };
        Text {
            locale,
            title,
            body,
        }
    }
}

/// A display name ready to be put in a text: cleaned, capped at [`NAME_CAP`], isolated.
fn name(raw: &str, locale: Locale) -> String {
    let placeholder = match locale {
        Locale::En => "a player",
        Locale::Ar => "لاعب",
    };
    isolate(&cap(&clean(raw), NAME_CAP), placeholder)
}

/// An event name ready to be put in a text: cleaned, capped at [`EVENT_CAP`], isolated.
fn event_name(raw: &str, locale: Locale) -> String {
    let placeholder = match locale {
        Locale::En => "your event",
        Locale::Ar => "الحدث",
    };
    isolate(&cap(&clean(raw), EVENT_CAP), placeholder)
}

/// Whether `c` changes the direction of the text around it.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `raw` without control characters, bidi controls or line separators, whitespace runs
/// made one space, trimmed.
fn clean(raw: &str) -> String {
    let kept: String = raw
        .chars()
        .filter(|&c| !c.is_control() || c.is_whitespace())
        .filter(|&c| !is_bidi_control(c) && c != '\u{2028}' && c != '\u{2029}')
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max` characters, the last one `…` when cut. A cut never leaves
/// a dangling zero-width joiner or a trailing space.
fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    while cut.ends_with(['\u{200D}', ' ']) {
        cut.pop();
    }
    cut.push(ELLIPSIS);
    cut
}

/// `text` between FSI and PDI; `fallback` when nothing is left of it.
fn isolate(text: &str, fallback: &str) -> String {
    let text = if text.is_empty() { fallback } else { text };
    format!("{FSI}{text}{PDI}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_notice(param: &str) -> Vec<Notice> {
        let p = param.to_owned();
        vec![
            Notice::FriendRequest { from: p.clone() },
            Notice::FriendAccepted { by: p.clone() },
            Notice::RoomInvite { from: p.clone() },
            Notice::MatchReady { event: p.clone() },
            Notice::EventStarting { event: p },
            Notice::Moderation,
        ]
    }

    #[test]
    fn locales_by_tag_with_english_the_fallback() {
        for tag in ["ar", "AR", "ar-EG", "ar_SA", "ar_EG.UTF-8", "ar-Latn"] {
            assert_eq!(Locale::from_tag(tag), Locale::Ar, "{tag}");
        }
        for tag in ["en", "en-US", "fr-FR", "", "arz", "und", "-ar"] {
            assert_eq!(Locale::from_tag(tag), Locale::En, "{tag}");
        }
    }

    #[test]
    fn every_kind_has_both_texts_naming_the_parameter() {
        let notices = every_notice("Layla");
        assert_eq!(notices.len(), NoticeKind::ALL.len());
        for notice in notices {
            let en = notice.text(Locale::En);
            let ar = notice.text(Locale::Ar);
            assert_eq!((en.locale, ar.locale), (Locale::En, Locale::Ar));
            assert_ne!(en.title, ar.title, "{notice:?}");
            assert_ne!(en.body, ar.body, "{notice:?}");
            // The Arabic text is Arabic: its title has an Arabic letter, the English one none.
            assert!(
                ar.title
                    .chars()
                    .any(|c| ('\u{0600}'..='\u{06FF}').contains(&c))
            );
            assert!(en.title.is_ascii());
            if notice != Notice::Moderation {
                for body in [&en.body, &ar.body] {
                    assert!(body.contains("\u{2068}Layla\u{2069}"), "{body}");
                }
            }
        }
        assert_eq!(
            Notice::FriendRequest {
                from: "Layla".into()
            }
            .text(Locale::Ar)
            .body,
            "طلب صداقة جديد من \u{2068}Layla\u{2069}."
        );
    }

    #[test]
    fn a_name_cannot_break_out_of_its_isolate() {
        // An override, a stray PDI, a newline and a mark, all meant to reorder the text.
        let hostile = "\u{202E}evil\u{2069}\u{2069}\n\u{200F}name\u{0007}";
        for notice in every_notice(hostile) {
            for locale in [Locale::En, Locale::Ar] {
                let body = notice.text(locale).body;
                let isolates = body.chars().filter(|&c| c == FSI).count();
                let pops = body.chars().filter(|&c| c == PDI).count();
                assert_eq!(isolates, pops, "{body:?}");
                assert!(isolates <= 1);
                assert!(
                    !body.chars().any(
                        |c| c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{200F}')
                    )
                );
                if notice != Notice::Moderation {
                    assert!(body.contains("\u{2068}evil name\u{2069}"), "{body:?}");
                }
            }
        }
    }

    #[test]
    fn parameters_are_capped() {
        let long = "ل".repeat(100);
        let body = Notice::FriendRequest { from: long.clone() }
            .text(Locale::Ar)
            .body;
        let inside: String = body
            .chars()
            .skip_while(|&c| c != FSI)
            .skip(1)
            .take_while(|&c| c != PDI)
            .collect();
        assert_eq!(inside.chars().count(), NAME_CAP);
        assert!(inside.ends_with(ELLIPSIS));
        let event = Notice::EventStarting { event: long }.text(Locale::En).body;
        assert_eq!(event.chars().filter(|&c| c == 'ل').count(), EVENT_CAP - 1);
        // Short enough: untouched.
        assert_eq!(cap("Layla", NAME_CAP), "Layla");
        assert_eq!(cap(&"a".repeat(NAME_CAP), NAME_CAP), "a".repeat(NAME_CAP));
        // No dangling joiner or space before the ellipsis.
        assert_eq!(cap("ab cdef", 4), "ab…");
        assert_eq!(cap("abc\u{200D}def", 5), "abc…");
    }

    #[test]
    fn an_empty_name_reads_as_a_placeholder() {
        let body = Notice::RoomInvite {
            from: "\u{202E} \n".into(),
        }
        .text(Locale::En)
        .body;
        assert_eq!(
            body,
            "\u{2068}a player\u{2069} invites you to a game of Basra."
        );
        let body = Notice::RoomInvite {
            from: String::new(),
        }
        .text(Locale::Ar)
        .body;
        assert_eq!(body, "دعوة من \u{2068}لاعب\u{2069} إلى لعبة بصرة.");
    }

    #[test]
    fn urgent_kinds() {
        let urgent: Vec<_> = NoticeKind::ALL.into_iter().filter(|k| k.urgent()).collect();
        assert_eq!(
            urgent,
            [
                NoticeKind::RoomInvite,
                NoticeKind::MatchReady,
                NoticeKind::EventStarting
            ]
        );
        let names: std::collections::HashSet<_> =
            NoticeKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), NoticeKind::ALL.len());
    }
}
