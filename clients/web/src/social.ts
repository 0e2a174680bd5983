// Friends: the live feed (AccountsService.WatchFriends: presence, requests, invites), the
// friends tab (code, add, accept/decline, block, the list with presence, watch a match),
// invites received on any screen with one-tap join, and inviting friends to my room.

import { timestampMs } from "@bufbuild/protobuf/wkt";
import { authed, currentUser, renew } from "./api";
import { el, errorText, notices, screens, shared, Code, ConnectError } from "./shell";
import { sitsOrSat } from "./table/rooms";
import { countNotice, inviteStands, requestVerdict, type InboxCount, type Opening } from "./feed";
import { reportButton } from "./report";
import { bdi, t, tx } from "./i18n";
import type { Friend, FriendPresence, Invite, ListFriendsResponse, WatchFriendsResponse } from "./gen/basra/accounts/v1/accounts_pb";
import { Activity } from "./gen/basra/accounts/v1/accounts_pb";

interface Social {
  presence: Map<string, FriendPresence>;
  lists?: ListFriendsResponse;
  invites: Invite[];
  requests: Friend[];
  /** The last kept note seen, kept in local storage: a reload resumes after it. */
  lastSeq: bigint;
  /** What the stream's snapshot said: notes from before it are judged by it. */
  opening?: Opening;
  /** The inbox's unread count (AccountsService.ListNotices) and its newest notice's id. */
  inbox: InboxCount;
  abort?: AbortController;
}

const social: Social = { presence: new Map(), invites: [], requests: [], lastSeq: 0n, inbox: { unread: 0, newestId: 0n } };
/** Called when the friends' state changed (the friends tab redraws itself through it). */
let onChange: () => void = () => {};
/** Also called then: a waiting table redraws its friends to invite (table/controller.ts). */
const feedWatchers = new Set<() => void>();

/** Calls `watcher` whenever the feed moves, until the function returned is called. */
export function onFeedChange(watcher: () => void): () => void {
  feedWatchers.add(watcher);
  return () => feedWatchers.delete(watcher);
}

const SEQ_KEY = "basra.feed.";

function savedSeq(userId: string): bigint {
  try {
    return BigInt(localStorage.getItem(SEQ_KEY + userId) ?? "0");
  } catch {
    return 0n;
  }
}

/** Opens the feed for the signed-in player (again after a sign-in), after the last note seen. */
export function startFeed(): void {
  stopFeed();
  const me = currentUser()?.userId ?? "";
  social.lastSeq = savedSeq(me);
  const abort = new AbortController();
  social.abort = abort;
  void (async () => {
    let backoff = 500;
    while (!abort.signal.aborted) {
      try {
        const stream = shared.api.accounts.watchFriends({ lastSeenSeq: social.lastSeq }, { signal: abort.signal });
        for await (const message of stream) {
          backoff = 500;
          await take(message);
          if (abort.signal.aborted) return;
          if (message.seq > social.lastSeq) {
            social.lastSeq = message.seq;
            localStorage.setItem(SEQ_KEY + me, String(message.seq));
          }
          // What the page has taken from the feed (the browser test waits on it).
          document.documentElement.dataset.feedSeq = String(social.lastSeq);
          changed();
        }
      } catch (err) {
        if (abort.signal.aborted) return;
        if (ConnectError.from(err).code === Code.Unauthenticated) await renew(shared.api).catch(() => false);
      }
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 8000);
    }
  })();
}

/** One message of the feed into the friends' state. */
async function take(message: WatchFriendsResponse): Promise<void> {
  const at = message.at ? timestampMs(message.at) : Date.now();
  const e = message.event;
  social.inbox = countNotice(social.inbox, message);
  switch (e.case) {
    case "snapshot":
      social.presence = new Map(e.value.friends.map((f) => [f.friend?.userId ?? "", f]));
      social.requests = e.value.incoming;
      social.opening = { at, presence: new Map(social.presence), incoming: e.value.incoming };
      social.invites = social.invites.filter((i) => inviteStands(i, 0, social.opening, Date.now(), sitsOrSat));
      document.documentElement.dataset.feed = "open";
      break;
    case "presenceChanged":
      social.presence.set(e.value.friend?.userId ?? "", e.value);
      break;
    case "friendRequest": {
      const verdict = requestVerdict(e.value, at, social.opening);
      const waiting =
        verdict === "show" ||
        (verdict === "ask" &&
          (await authed(shared.api, () => shared.api.accounts.listFriends({})).then(
            (lists) => lists.incoming.some((f) => f.userId === e.value.userId),
            () => true,
          )));
      if (waiting) social.requests = [...social.requests.filter((f) => f.userId !== e.value.userId), e.value];
      break;
    }
    case "friendAdded":
      social.requests = social.requests.filter((f) => f.userId !== e.value.userId);
      break;
    case "invite":
      if (inviteStands(e.value, at, social.opening, Date.now(), sitsOrSat)) {
        social.invites = [...social.invites.filter((i) => i.roomId !== e.value.roomId), e.value];
      }
      break;
  }
}

export function stopFeed(): void {
  social.abort?.abort();
  social.presence = new Map();
  social.invites = [];
  social.requests = [];
  social.lists = undefined;
  social.lastSeq = 0n;
  social.opening = undefined;
  social.inbox = { unread: 0, newestId: 0n };
  delete document.documentElement.dataset.feed;
  delete document.documentElement.dataset.feedSeq;
}

/** The feed moved: the friends tab, the notices under the header and a waiting table redraw. */
function changed(): void {
  onChange();
  drawNotices();
  for (const watcher of feedWatchers) watcher();
}

function drawNotices(): void {
  const old = document.querySelector("[data-testid=notices]");
  const fresh = renderNotices();
  if (old && fresh) old.replaceWith(fresh);
  else if (old) old.remove();
  else if (fresh) document.querySelector("header.bar")?.append(fresh);
}

function renderNotices(): HTMLElement | null {
  const invites = social.invites.filter((i) => inviteStands(i, Infinity, undefined, Date.now(), sitsOrSat));
  const unread = social.inbox.unread;
  if (!invites.length && !social.requests.length && !unread) return null;
  return el(
    "div",
    { class: "notices", "data-testid": "notices", role: "status", "aria-live": "polite" },
    unread
      ? el(
          "p",
          { class: "notice", "data-testid": "inbox-unread" },
          t("inboxUnread", { count: unread }),
          " ",
          el("button", { class: "quiet", "data-testid": "mark-read", onclick: () => markAllRead() }, t("markRead")),
        )
      : null,
    ...invites.map((invite) =>
      el(
        "p",
        { class: "notice", "data-testid": "invite" },
        ...tx("inviteFrom", { name: bdi(invite.from?.displayName ?? "?"), target: invite.settings?.targetScore ?? 101 }),
        " ",
        el("button", { "data-testid": "join-invite", onclick: () => joinInvite(invite) }, t("joinInvite")),
        el("button", { class: "quiet", onclick: () => dropInvite(invite) }, t("dismiss")),
      ),
    ),
    ...social.requests.map((friend) =>
      el(
        "p",
        { class: "notice", "data-testid": "friend-request" },
        ...tx("friendRequestFrom", { name: bdi(friend.displayName) }),
        " ",
        el("button", { "data-testid": "accept", onclick: () => answer(friend, true) }, t("accept")),
        el("button", { "data-testid": "decline", onclick: () => answer(friend, false) }, t("decline")),
      ),
    ),
  );
}

notices.render = renderNotices;

/** Marks every notice up to the newest known read (MarkNoticesRead); the count is the server's answer. */
async function markAllRead(): Promise<void> {
  const api = shared.api;
  const upToId = social.inbox.newestId;
  if (!upToId) return;
  try {
    const answer = await authed(api, () => api.accounts.markNoticesRead({ upToId }));
    social.inbox = { ...social.inbox, unread: answer.unreadCount };
  } catch {
    // unchanged: the next snapshot says how things are
  }
  drawNotices();
}

function dropInvite(invite: Invite): void {
  social.invites = social.invites.filter((i) => i !== invite);
  drawNotices();
}

async function joinInvite(invite: Invite): Promise<void> {
  dropInvite(invite);
  const api = shared.api;
  try {
    const joined = await authed(api, () => api.matchmaking.joinRoom({ target: { case: "joinCode", value: invite.joinCode } }));
    screens.table(joined.roomId);
  } catch (err) {
    screens.lobby(errorText(err));
  }
}

async function answer(friend: Friend, accept: boolean): Promise<void> {
  const api = shared.api;
  try {
    if (accept) await authed(api, () => api.accounts.acceptFriend({ userId: friend.userId }));
    else await authed(api, () => api.accounts.declineFriend({ userId: friend.userId }));
  } catch {
    // gone meanwhile: the list below says how things are
  }
  social.requests = social.requests.filter((f) => f.userId !== friend.userId);
  await refreshLists();
  changed();
}

async function refreshLists(): Promise<void> {
  const api = shared.api;
  social.lists = await authed(api, () => api.accounts.listFriends({})).catch(() => social.lists);
}

/** What a friend is doing, in words. */
function presenceText(p: FriendPresence | undefined): string {
  switch (p?.presence?.activity) {
    case Activity.ONLINE:
      return t("online");
    case Activity.IN_QUEUE:
      return t("inQueue");
    case Activity.IN_MATCH:
      return t("inMatch");
    default:
      return t("offline");
  }
}

/** Friends' refusals in the reader's words. */
function friendError(err: unknown): string {
  const e = ConnectError.from(err);
  switch (e.code) {
    case Code.NotFound:
      return t("notFound");
    case Code.AlreadyExists:
      return t("alreadyFriends");
    case Code.FailedPrecondition:
      return t("unblockFirst");
    case Code.ResourceExhausted:
      return t("tooManyRequests");
    case Code.InvalidArgument:
      return /themselves|the caller/.test(e.rawMessage) ? t("notYourself") : t("notFound");
    default:
      return errorText(err);
  }
}

/**
 * Asks `raw` to be a friend: a username or a friend code. Usernames have no dash or space,
 * so with one it is a code; a code typed without its dash looks like a username, so a
 * username not found that has a code's shape is tried as a code (a code may have no digit).
 */
async function addFriendBy(raw: string) {
  const api = shared.api;
  const ask = (target: { case: "friendCode" | "username"; value: string }) =>
    authed(api, () => api.accounts.addFriend({ target }));
  if (/[- ]/.test(raw)) return ask({ case: "friendCode", value: raw });
  try {
    return await ask({ case: "username", value: raw });
  } catch (err) {
    if (ConnectError.from(err).code !== Code.NotFound || !/^[A-Za-z0-9]{8}$/.test(raw)) throw err;
    return ask({ case: "friendCode", value: raw });
  }
}

/** The friends tab. */
export function friendsPanel(): HTMLElement {
  const api = shared.api;
  const message = el("p", { role: "status", "data-testid": "friends-message" });
  const code = el("p", { "data-testid": "friend-code" });
  // The lists redraw whenever they or a friend's presence change; the field is never
  // redrawn, so what is being typed (and the focus) stays.
  const lists = el("div", {});
  const input = el("input", { id: "friend-target", "data-testid": "friend-target", autocomplete: "off", maxlength: 24 });
  const form = el(
    "form",
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const raw = input.value.trim();
        if (!raw) return;
        try {
          const added = await addFriendBy(raw);
          const name = added.friend?.displayName ?? raw;
          message.textContent = added.becameFriends ? t("nowFriends", { name }) : t("requestSent", { name });
          input.value = "";
        } catch (err) {
          message.textContent = friendError(err);
        }
        await refreshLists();
        draw();
      },
    },
    el("label", { for: "friend-target" }, t("addFriend"), " (", t("friendTarget"), ")"),
    input,
    el("button", { type: "submit", "data-testid": "add-friend" }, t("add")),
  );
  const panel = el(
    "section",
    { class: "card-panel", "data-testid": "friends-panel", "aria-labelledby": "friends-title" },
    el("h2", { id: "friends-title" }, t("tabFriends")),
    code,
    form,
    message,
    lists,
  );
  const act = (call: () => Promise<unknown>) => async () => {
    try {
      await authed(shared.api, call);
    } catch (err) {
      message.textContent = friendError(err);
    }
    await refreshLists();
    draw();
  };
  const friendRow = (f: Friend) => {
    const p = social.presence.get(f.userId);
    const room = p?.presence?.roomId;
    return el(
      "li",
      { "data-testid": "friend", "data-presence": p?.presence?.activity ?? Activity.OFFLINE },
      el("span", { class: `dot ${p && p.presence?.activity !== Activity.OFFLINE ? "on" : "off"}`, "aria-hidden": "true" }),
      bdi(f.displayName),
      ` — ${presenceText(p)} `,
      room ? el("button", { "data-testid": "watch", onclick: () => screens.table(room, { spectate: true }) }, t("watch")) : null,
      el("button", { class: "quiet", "aria-label": `${t("remove")}: ${f.displayName}`, onclick: act(() => api.accounts.removeFriend({ userId: f.userId })) }, t("remove")),
      el("button", { class: "quiet", "data-testid": "block", "aria-label": `${t("block")}: ${f.displayName}`, onclick: act(() => api.accounts.blockPlayer({ userId: f.userId })) }, t("block")),
      reportButton(f.userId, f.displayName),
    );
  };
  const draw = () => {
    if (!panel.isConnected && lists.childElementCount) {
      onChange = () => {};
      return;
    }
    const now = social.lists;
    code.textContent = t("yourFriendCode", { code: now?.friendCode ?? "…" });
    lists.replaceChildren(...([
      now?.incoming.length
        ? el(
            "div",
            {},
            el("h3", {}, t("incoming")),
            el("ul", {}, ...now.incoming.map((f) =>
              el("li", { "data-testid": "incoming" }, bdi(f.displayName), " ",
                el("button", { "data-testid": "accept-friend", onclick: () => answer(f, true).then(draw) }, t("accept")),
                el("button", { onclick: () => answer(f, false).then(draw) }, t("decline")),
                el("button", { class: "quiet", onclick: act(() => api.accounts.blockPlayer({ userId: f.userId })) }, t("block")),
              ))),
          )
        : null,
      el("h3", {}, t("friendsList")),
      now?.friends.length ? el("ul", { class: "friends", "data-testid": "friends" }, ...now.friends.map(friendRow)) : el("p", {}, t("noFriends")),
      now?.outgoing.length
        ? el("div", {}, el("h3", {}, t("outgoing")), el("ul", {}, ...now.outgoing.map((f) =>
            el("li", { "data-testid": "outgoing" }, bdi(f.displayName), " ",
              el("button", { class: "quiet", onclick: act(() => api.accounts.cancelFriend({ userId: f.userId })) }, t("cancelRequest"))))))
        : null,
      now?.blocked.length
        ? el("div", {}, el("h3", {}, t("blocked")), el("ul", {}, ...now.blocked.map((f) =>
            el("li", { "data-testid": "blocked" }, bdi(f.displayName), " ",
              el("button", { class: "quiet", onclick: act(() => api.accounts.unblockPlayer({ userId: f.userId })) }, t("unblock"))))))
        : null,
    ] as (HTMLElement | null)[]).filter((x): x is HTMLElement => x !== null));
  };
  onChange = () => {
    void refreshLists().then(draw);
  };
  draw();
  void refreshLists().then(draw);
  return panel;
}

/** Friends online to invite into my waiting room (at the table). */
export function inviteList(roomId: string): HTMLElement {
  const online = [...social.presence.values()].filter((p) => p.presence?.activity === Activity.ONLINE || p.presence?.activity === Activity.IN_QUEUE);
  const message = el("p", { role: "status", "data-testid": "invite-message" });
  const api = shared.api;
  return el(
    "section",
    { class: "card-panel", "data-testid": "invite-friends", "aria-labelledby": "invite-title" },
    el("h2", { id: "invite-title" }, t("inviteFriends")),
    online.length
      ? el("ul", {}, ...online.map((p) =>
          el("li", {}, bdi(p.friend?.displayName ?? "?"), " ",
            el("button", {
              "data-testid": "invite-friend",
              onclick: async () => {
                try {
                  await authed(api, () => api.matchmaking.inviteFriend({ roomId, userId: p.friend?.userId ?? "" }));
                  message.textContent = t("invited", { name: p.friend?.displayName ?? "" });
                } catch (err) {
                  message.textContent = errorText(err);
                }
              },
            }, t("invite")))))
      : el("p", {}, t("noOnlineFriends")),
    message,
  );
}

