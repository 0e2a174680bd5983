// Which kept notes of the friends' feed (WatchFriends) the header still offers, decided
// apart from the page (no DOM, no calls). A stream opens with a snapshot (the friends,
// their presence, the requests waiting now) and then replays the kept notes after the
// seq the page asked from; a note written before the snapshot stands only if the
// snapshot agrees with it: a request answered since is no longer waiting, an invite
// whose inviter is no longer at a table was to a room that has ended. The inbox's
// unread count follows the feed too (`countNotice`).

import type { Friend, FriendPresence, Invite, WatchFriendsResponse } from "./gen/basra/accounts/v1/accounts_pb";
import { Activity } from "./gen/basra/accounts/v1/accounts_pb";

/** What the stream's snapshot said, and when (the server's clock, ms). */
export interface Opening {
  at: number;
  presence: Map<string, FriendPresence>;
  incoming: Friend[];
}

/**
 * How far apart the server's clocks may be (notes and snapshots may be stamped by
 * different replicas): a note this close to the snapshot is not judged by it alone.
 */
export const CLOCK_MARGIN_MS = 2000;

/** Whether a note stamped `at` was surely written before the snapshot was read. */
function before(at: number, opening: Opening): boolean {
  return at < opening.at - CLOCK_MARGIN_MS;
}

/**
 * A friend request note: "show" it, "drop" it (answered or withdrawn before the
 * snapshot, which no longer lists it), or "ask" the server (too close to the snapshot
 * to tell).
 */
export function requestVerdict(from: Friend, at: number, opening: Opening | undefined): "show" | "drop" | "ask" {
  if (!opening || opening.incoming.some((f) => f.userId === from.userId)) return "show";
  if (before(at, opening)) return "drop";
  return at > opening.at + CLOCK_MARGIN_MS ? "show" : "ask";
}

/**
 * Whether an invite note still stands: not lapsed, not to a room this browser sits or
 * sat at (`known`), and, written before the snapshot, from a friend the snapshot shows
 * at a table (that table, when the presence names it).
 */
export function inviteStands(invite: Invite, at: number, opening: Opening | undefined, now: number, known: (roomId: string) => boolean): boolean {
  const expires = invite.expiresAt ? Number(invite.expiresAt.seconds) * 1000 + Math.floor(invite.expiresAt.nanos / 1e6) : Infinity;
  if (expires <= now || known(invite.roomId)) return false;
  if (!opening || !before(at, opening)) return true;
  const inviter = opening.presence.get(invite.from?.userId ?? "")?.presence;
  return inviter?.activity === Activity.IN_MATCH && (!inviter.roomId || inviter.roomId === invite.roomId);
}

/** The inbox's unread count as the feed tells it, and the newest notice id it knows. */
export interface InboxCount {
  unread: number;
  newestId: bigint;
}

/**
 * The count after `message`: a snapshot sets it; an event carrying a notice newer than
 * any known adds one (a replayed note's notice was counted in the snapshot already).
 */
export function countNotice(count: InboxCount, message: WatchFriendsResponse): InboxCount {
  if (message.event.case === "snapshot") {
    return { unread: message.event.value.unreadNotices, newestId: message.event.value.newestNoticeId };
  }
  if (message.noticeId > count.newestId) return { unread: count.unread + 1, newestId: message.noticeId };
  return count;
}
