// The page's words in English and Arabic. The language comes from the browser (or the
// reader's own choice, remembered); Arabic lays the page out right to left.

export type Lang = "en" | "ar";

const en = {
  title: "Basra",
  signInTitle: "Play Basra",
  yourName: "Your name",
  signIn: "Play as a guest",
  signedInAs: "Signed in as {name}",
  signOut: "Sign out",
  language: "العربية",
  playComputer: "Play the computer",
  quickMatch: "Quick match",
  createPrivate: "Create a private room",
  createPublic: "Create a public room",
  joinByCode: "Join by code",
  code: "Room code",
  join: "Join",
  publicRooms: "Public rooms",
  refresh: "Refresh",
  noRooms: "No public room is waiting right now.",
  seatsTaken: "{taken} of {seats} seats taken, to {target}",
  searching: "Looking for an opponent… {waiting} waiting",
  cancel: "Cancel",
  shareCode: "Share this code with your friend: {code}",
  waitingFor: "Waiting for players…",
  yourTurn: "Your turn",
  theirTurn: "{name}'s turn",
  secondsLeft: "{s} s",
  deck: "Deck: {n}",
  pile: "Pile: {n}",
  score: "Score: {n}",
  round: "Round {n}",
  table: "Table",
  emptyTable: "The table is empty",
  yourHand: "Your hand",
  opponentHand: "{name} holds {n} cards",
  takes: "takes {cards}",
  takesNothing: "takes nothing",
  captured: "{name} took {cards}",
  basra: "Basra! +{points}",
  jackBasra: "Jack Basra! +{points}",
  komiBasra: "Komi Basra! +{points}",
  resign: "Resign",
  resignConfirm: "Resign this match?",
  rematch: "Rematch",
  backToLobby: "Back to the lobby",
  youWon: "You won!",
  youLost: "You lost.",
  noWinner: "The match was closed.",
  finalScore: "Final score: {scores}",
  seed: "Shuffle seed (check it against the commitment): {seed}",
  reasonResigned: "{name} resigned.",
  reasonAbandoned: "{name} left the match.",
  roundOver: "Round {n} over: {scores}",
  disconnected: "{name} lost the connection.",
  reconnected: "{name} is back.",
  reconnecting: "Connection lost — reconnecting…",
  rematchOffered: "{name} wants a rematch.",
  chat: "Quick chat",
  you: "You",
  stale: "The table changed — look again.",
  error: "Something went wrong: {message}",
  replaced: "This match is open in another tab.",
  rank: { 1: "Ace", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine", 10: "Ten", 11: "Jack", 12: "Queen", 13: "King" } as Record<number, string>,
  suit: { 1: "clubs", 2: "diamonds", 3: "hearts", 4: "spades" } as Record<number, string>,
  cardName: "{rank} of {suit}",
  phrases: {
    1: "Hello!", 2: "Good luck!", 3: "Nice play!", 4: "Basra!", 5: "Oops!",
    6: "Thanks!", 7: "Hurry up!", 8: "Well played!", 9: "Good game!",
  } as Record<number, string>,
  keysHint: "Keys: 1–4 play a card, Tab moves between cards.",
};

type Words = typeof en;

const ar: Words = {
  title: "بصرة",
  signInTitle: "العب بصرة",
  yourName: "اسمك",
  signIn: "العب كضيف",
  signedInAs: "أنت {name}",
  signOut: "خروج",
  language: "English",
  playComputer: "العب ضد الكمبيوتر",
  quickMatch: "مباراة سريعة",
  createPrivate: "أنشئ غرفة خاصة",
  createPublic: "أنشئ غرفة عامة",
  joinByCode: "ادخل برمز",
  code: "رمز الغرفة",
  join: "ادخل",
  publicRooms: "الغرف العامة",
  refresh: "حدّث",
  noRooms: "لا توجد غرفة عامة تنتظر الآن.",
  seatsTaken: "{taken} من {seats} مقاعد مشغولة، حتى {target}",
  searching: "نبحث عن منافس… {waiting} في الانتظار",
  cancel: "إلغاء",
  shareCode: "أرسل هذا الرمز لصديقك: {code}",
  waitingFor: "في انتظار اللاعبين…",
  yourTurn: "دورك",
  theirTurn: "دور {name}",
  secondsLeft: "{s} ث",
  deck: "الورق الباقي: {n}",
  pile: "المكسب: {n}",
  score: "النقاط: {n}",
  round: "الجولة {n}",
  table: "الأرض",
  emptyTable: "الأرض فاضية",
  yourHand: "ورقك",
  opponentHand: "مع {name} {n} ورقات",
  takes: "تاخد {cards}",
  takesNothing: "لا تاخد شيئًا",
  captured: "{name} أخذ {cards}",
  basra: "بصرة! +{points}",
  jackBasra: "بصرة بالولد! +{points}",
  komiBasra: "بصرة بالكومي! +{points}",
  resign: "انسحب",
  resignConfirm: "تنسحب من المباراة؟",
  rematch: "مباراة أخرى",
  backToLobby: "ارجع للقائمة",
  youWon: "كسبت!",
  youLost: "خسرت.",
  noWinner: "أُغلقت المباراة.",
  finalScore: "النتيجة: {scores}",
  seed: "بذرة الخلط (قارنها بالالتزام): {seed}",
  reasonResigned: "{name} انسحب.",
  reasonAbandoned: "{name} ترك المباراة.",
  roundOver: "انتهت الجولة {n}: {scores}",
  disconnected: "انقطع اتصال {name}.",
  reconnected: "{name} رجع.",
  reconnecting: "انقطع الاتصال — نعيد الاتصال…",
  rematchOffered: "{name} يريد مباراة أخرى.",
  chat: "دردشة سريعة",
  you: "أنت",
  stale: "تغيّرت الأرض — انظر مرة أخرى.",
  error: "حدث خطأ: {message}",
  replaced: "المباراة مفتوحة في نافذة أخرى.",
  rank: { 1: "آص", 2: "اثنين", 3: "ثلاثة", 4: "أربعة", 5: "خمسة", 6: "ستة", 7: "سبعة", 8: "ثمانية", 9: "تسعة", 10: "عشرة", 11: "ولد", 12: "بنت", 13: "شايب" },
  suit: { 1: "سباتي", 2: "ديناري", 3: "كوبة", 4: "بستوني" },
  cardName: "{rank} {suit}",
  phrases: {
    1: "أهلًا!", 2: "بالتوفيق!", 3: "لعبة حلوة!", 4: "بصرة!", 5: "أوبس!",
    6: "شكرًا!", 7: "يلّا!", 8: "لعبت كويس!", 9: "مباراة حلوة!",
  },
  keysHint: "المفاتيح: ١–٤ للعب ورقة، Tab للتنقل بين الأوراق.",
};

const words: Record<Lang, Words> = { en, ar };

let current: Lang = pickLanguage();

function pickLanguage(): Lang {
  const saved = localStorage.getItem("basra.lang");
  if (saved === "en" || saved === "ar") return saved;
  const wanted = navigator.languages?.length ? navigator.languages : [navigator.language];
  return wanted.some((l) => l.toLowerCase().startsWith("ar")) ? "ar" : "en";
}

export function lang(): Lang {
  return current;
}

export function setLang(next: Lang): void {
  current = next;
  localStorage.setItem("basra.lang", next);
  applyDirection();
}

/** Sets the document's language and direction (right to left for Arabic). */
export function applyDirection(): void {
  document.documentElement.lang = current;
  document.documentElement.dir = current === "ar" ? "rtl" : "ltr";
  document.title = words[current].title;
}

type Key = { [K in keyof Words]: Words[K] extends string ? K : never }[keyof Words];

/** The phrase `key` in the reader's language, with `{name}` placeholders filled. */
export function t(key: Key, values: Record<string, string | number> = {}): string {
  return (words[current][key] as string).replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ""));
}

/** A quick-chat phrase code in the reader's language. */
export function phrase(code: number): string {
  return words[current].phrases[code] ?? "…";
}

export function phraseCodes(): number[] {
  return Object.keys(en.phrases).map(Number);
}

/** A card's name for screen readers: "Seven of diamonds". */
export function cardName(rank: number, suit: number): string {
  const w = words[current];
  return w.cardName.replace("{rank}", w.rank[rank] ?? "?").replace("{suit}", w.suit[suit] ?? "?");
}
