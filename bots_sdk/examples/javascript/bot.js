#!/usr/bin/env node
// A Tiến Lên bot in JavaScript (Node 20+), written from docs/protocol.md and the .proto
// files alone: @grpc/grpc-js for the stream, @grpc/proto-loader for the messages, and
// nothing from the platform's Python code. It plays from the legal plays the referee
// sends with every move request, so it never makes an illegal move.
//
//   npm ci
//   TIENLEN_TOKEN=<the bot's token> node bot.js --server 127.0.0.1:50051
//
// Given one referee of a pool, it connects to every referee the pool lists and follows
// them as they come and go (docs/protocol.md, "Referee pools").
// Flags (or environment): --server HOST:PORT (TIENLEN_SERVER, default 127.0.0.1:50051),
// --max-tables N (TIENLEN_MAX_TABLES, default 4), --name NAME (TIENLEN_BOT_NAME),
// --exit-when-idle (leave once every table it was given has ended). The token only comes
// from TIENLEN_TOKEN (a command line is visible to other users). TIENLEN_PROTO_DIR points
// at the proto/ directory (default: the repository's, three levels up).
"use strict";

const path = require("node:path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const VERSION = "1.0.0";

// ------------------------------------------------------------------ settings

function settings(argv, env) {
  const out = {
    server: env.TIENLEN_SERVER || "127.0.0.1:50051",
    token: env.TIENLEN_TOKEN || "",
    maxTables: Number(env.TIENLEN_MAX_TABLES || 4),
    name: env.TIENLEN_BOT_NAME || "js-example",
    exitWhenIdle: false,
    protoDir: env.TIENLEN_PROTO_DIR || path.join(__dirname, "..", "..", "..", "proto"),
    // Hosted by the platform (docs/hosting.md): no network, one local socket per referee
    // of the pool in this directory, named for the address the pool lists.
    refereeSockets: env.TIENLEN_REFEREE_SOCKETS || "",
    // and, when its runner shares a host with referees, their own sockets (dialled first)
    refereeLocal: env.TIENLEN_REFEREE_LOCAL || "",
    serverFallback: env.TIENLEN_SERVER_FALLBACK || "",
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${flag} needs a value`);
      return argv[++i];
    };
    if (flag === "--server") out.server = value();
    else if (flag === "--max-tables") out.maxTables = Number(value());
    else if (flag === "--name") out.name = value();
    else if (flag === "--exit-when-idle") out.exitWhenIdle = true;
    else if (flag === "--help" || flag === "-h") {
      console.log("usage: TIENLEN_TOKEN=... node bot.js [--server HOST:PORT] [--max-tables N] " +
                  "[--name NAME] [--exit-when-idle]");
      process.exit(0);
    } else fail(`unknown argument ${JSON.stringify(flag)} (see --help)`);
  }
  if (!out.token) fail("no bot token: set TIENLEN_TOKEN");
  if (!/^[^:]+:\d{1,5}$/.test(out.server) && !/^unix:.+/.test(out.server)) {
    fail(`--server must be HOST:PORT or unix:PATH, got ${JSON.stringify(out.server)}`);
  }
  if (!Number.isInteger(out.maxTables) || out.maxTables < 1) fail("--max-tables must be a positive integer");
  return out;
}

function fail(message) {
  console.error(`bot.js: error: ${message}`);
  process.exit(2);
}

function log(message) {
  console.log(`${new Date().toISOString().slice(11, 19)} ${message}`);
}

// Where to dial a referee the pool lists: its address, or for a hosted bot the local
// socket the platform relays to it (the first 16 hex digits of the address's SHA-256),
// or the referee's own socket by that name in localDir when it has one there (a referee
// on the runner's host: no hop).
function dialAddress(address, socketDir, localDir) {
  if (!socketDir) return address;
  const name = require("node:crypto").createHash("sha256").update(address).digest("hex").slice(0, 16);
  const near = localDir ? `${localDir.replace(/\/+$/, "")}/${name}.sock` : "";
  if (near && require("node:fs").existsSync(near)) return `unix:${near}`;
  return `unix:${socketDir.replace(/\/+$/, "")}/${name}.sock`;
}

// ------------------------------------------------------------------ cards and choices

const RANKS = ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2"];
const SUITS = ["S", "C", "D", "H"];
// A card is an integer 0..51: rank * 4 + suit (docs/protocol.md, "Encodings").
const cardText = (c) => RANKS[c >> 2] + SUITS[c & 3];
const describe = (cards) => (cards === null ? "pass" : cards.map(cardText).join(" "));

// The choice: the legal play whose strongest card is weakest (shedding small cards first),
// more cards first among equals; keep 2s (cards 48..51) by passing when passing is
// allowed; decline every offer (a pass, which does not lock the seat out). Returns the
// cards to play (null to pass) and a note saying why: the referee keeps the note in the
// game's record for this bot's owner only and never sends it to another seat (at most
// 256 bytes of UTF-8; docs/protocol.md, Move.note).
function choose(view) {
  const plays = view.legal_plays.map((p) => p.cards.map(Number));
  if (view.offer) {
    return view.can_pass ? { cards: null, note: `declined the offer ${view.offer}` }
      : { cards: plays[0], note: "had to take the offer" };
  }
  if (plays.length === 0) return { cards: null, note: "nothing beats the table" };
  plays.sort((a, b) => Math.max(...a) - Math.max(...b) || b.length - a.length);
  const best = plays[0];
  if (view.can_pass && Math.max(...best) >= 48 && view.table) {
    return { cards: null, note: `kept my 2s: the lowest of ${plays.length} plays is ${describe(best)}` };
  }
  return { cards: best, note: `lowest of ${plays.length} plays` };
}

// ------------------------------------------------------------------ the stream

function loadGateway(protoDir) {
  const definition = protoLoader.loadSync("tienlen/v1/bot_gateway.proto", {
    includeDirs: [protoDir],
    keepCase: true, // field names as in the .proto: table_id, legal_plays, ...
    longs: String, // uint64 move ids as strings (echoed back unchanged)
    enums: String, // enum values by name, e.g. "MOVE_ERROR_CODE_NOT_IN_HAND"
    defaults: true, // unset fields read as 0, "", false, []
    oneofs: true, // message.body names the field that is set
  });
  return grpc.loadPackageDefinition(definition).tienlen.v1.BotGateway;
}

// Keepalive as docs/protocol.md says clients must use (else the referee closes the
// connection for pinging too often).
const CHANNEL_OPTIONS = {
  "grpc.keepalive_time_ms": 20000,
  "grpc.keepalive_timeout_ms": 10000,
  "grpc.keepalive_permit_without_calls": 1,
  "grpc.http2.max_pings_without_data": 0,
};

// One stream to one referee. A bot given one referee of a pool keeps one Link per live
// referee (docs/protocol.md, "Referee pools"); every message is handled by the Bot with
// the Link it came on, and answers go back on that Link.
class Link {
  constructor(bot, address, { seed = false, expectedId = "" } = {}) {
    this.bot = bot;
    this.address = address;
    this.seed = seed; // the address we were given: never dropped
    this.expectedId = expectedId; // the pool's id for this address
    this.refereeId = ""; // Welcome.referee_id ("" outside a pool)
    this.view = []; // the pool as this referee last listed it: [[id, address], ...]
    this.welcomed = false;
    this.retired = false; // left the pool: finish its tables, then close for good
    this.offered = null; // the capacity this referee was last told
    this.backoffMs = 500;
    this.client = null;
    this.call = null;
  }

  get key() { return this.refereeId || this.expectedId || this.address; }

  start() {
    const bot = this.bot;
    this.client = new bot.Gateway(this.address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    const call = (this.call = this.client.Connect());
    call.on("data", (message) => bot.onMessage(this, message));
    call.on("error", (err) => this.onEnd(err));
    call.on("end", () => this.onEnd(null));
    const others = bot.tables.size - bot.tablesOn(this);
    this.offered = Math.max(1, bot.config.maxTables - others); // 0 would mean 1 here
    call.write({
      hello: {
        token: bot.config.token,
        bot_name: bot.config.name,
        bot_version: process.env.TIENLEN_BOT_VERSION || VERSION,
        max_tables: this.offered,
        protocol_version: 1,
        sdk_name: "tienlen-js-example",
        sdk_version: VERSION,
      },
    });
  }

  send(message) {
    if (this.call) this.call.write(message);
  }

  close() {
    if (this.call) this.call.end(); // half-close; the referee ends the stream
  }

  onEnd(err) {
    if (!this.call) return; // already handled (both "error" and "end" may come)
    this.call = null;
    this.client.close();
    this.view = [];
    const bot = this.bot;
    const why = err ? `${grpc.status[err.code] || err.code}: ${err.details || err.message}` : "stream closed";
    if (bot.leaving || this.retired) return bot.dropLink(this);
    if (err && [grpc.status.UNAUTHENTICATED, grpc.status.INVALID_ARGUMENT, grpc.status.PERMISSION_DENIED].includes(err.code)) {
      if (!this.seed) return bot.dropLink(this); // another referee refusing us: leave it
      console.error(`bot.js: error: the referee refused the connection: ${why}`);
      process.exit(2);
    }
    if (this.seed && !bot.welcomed && !bot.config.refereeSockets) {
      // The first connection failed: most likely a wrong address or port (a hosted bot
      // retries: its referee may be restarting).
      console.error(`bot.js: error: cannot connect to the referee at ${this.address}: ${why}`);
      process.exit(2);
    }
    const fallback = bot.config.serverFallback;
    if (this.seed && !bot.welcomed && fallback && this.address !== fallback) {
      // never welcomed there (a hosted bot's local referee that died as it started)
      log(`no referee at ${this.address}: trying ${fallback}`);
      this.address = fallback;
    }
    const wait = this.backoffMs * (0.5 + Math.random() / 2);
    log(`connection to ${this.address} lost (${why}); reconnecting in ${(wait / 1000).toFixed(1)} s`);
    this.backoffMs = Math.min(30000, this.backoffMs * 2);
    setTimeout(() => (this.retired || bot.leaving ? bot.dropLink(this) : this.start()), wait);
  }
}

class Bot {
  constructor(config) {
    this.config = config;
    this.Gateway = loadGateway(config.protoDir);
    this.links = [];
    this.welcomed = false; // ever: until then a failure is reported, not retried
    this.tables = new Map(); // table_id -> {seat, score, link, requests: Map(move_id -> request)}
    this.tablesDone = 0;
    this.moves = 0;
    this.rejected = 0;
    this.strikes = 0;
    this.leaving = false;
  }

  start() {
    this.addLink(this.config.server, { seed: true });
  }

  addLink(address, options) {
    const link = new Link(this, address, options);
    this.links.push(link);
    link.start();
  }

  dropLink(link) {
    for (const [id, table] of this.tables) {
      if (table.link === link) this.tables.delete(id); // resumed elsewhere by the platform
    }
    this.links = this.links.filter((l) => l !== link);
    if (this.leaving && this.links.length === 0) this.bye();
  }

  tablesOn(link) {
    let n = 0;
    for (const table of this.tables.values()) if (table.link === link) n++;
    return n;
  }

  // One stream per referee the connected referees list; streams to referees no longer
  // listed finish their tables, then close.
  followPool() {
    const members = new Map();
    for (const link of this.links) for (const [id, address] of link.view) members.set(id, address);
    if (members.size === 0 || this.leaving) return;
    const known = new Set(this.links.filter((l) => !l.retired).map((l) => l.key));
    for (const [id, address] of members) {
      if (!known.has(id)) {
        const target = dialAddress(address, this.config.refereeSockets, this.config.refereeLocal);
        log(`pool: connecting to referee ${id} at ${address}${target !== address ? ` through ${target}` : ""}`);
        this.addLink(target, { expectedId: id });
      }
    }
    for (const link of this.links) {
      if (!link.seed && !link.retired && !members.has(link.key)) {
        link.retired = true;
        if (this.tablesOn(link) === 0) link.close();
      }
    }
  }

  // Each pool stream may start the tables the others leave free: max tables in total.
  shareCapacity() {
    for (const link of this.links) {
      if (!link.refereeId || !link.call) continue;
      const offer = Math.max(0, this.config.maxTables - (this.tables.size - this.tablesOn(link)));
      if (offer !== link.offered) {
        link.offered = offer;
        link.send({ capacity: { max_tables: offer } });
      }
    }
  }

  onMessage(link, message) {
    const body = message[message.body];
    const table = body && this.tables.get(body.table_id);
    switch (message.body) {
      case "welcome":
        this.welcomed = link.welcomed = true;
        link.backoffMs = 500;
        link.refereeId = body.referee_id;
        log(`connected to ${link.address}${body.referee_id ? ` (referee ${body.referee_id})` : ""} as ` +
            `${body.bot_name} (bot id ${body.bot_id}; up to ${body.max_tables} tables; ` +
            `${body.resumed_seats} seats resumed)`);
        if (body.resumed_seats === 0) { // back too late: its seats there were forfeited
          for (const [id, t] of this.tables) if (t.link === link) this.tables.delete(id);
        }
        this.shareCapacity();
        this.followPool();
        break;
      case "pool":
        link.view = body.referees.map((r) => [r.referee_id, r.address]);
        this.followPool();
        break;
      case "table_start":
        if (table && table.link !== link) {
          log(`table ${body.table_id} moved to referee ${link.key}`); // its referee died
          table.link = link;
          table.requests.clear();
        } else if (!table) {
          this.tables.set(body.table_id, { seat: body.seat, score: 0, link, requests: new Map() });
          log(`table ${body.table_id}: seat ${body.seat} of ${body.players}, preset ${body.preset}, ` +
              `${body.games} games, ${body.move_time_ms} ms per move`);
        }
        this.shareCapacity();
        break;
      case "game_start":
        if (table) table.seat = body.seat;
        break;
      case "move_request":
        this.answer(link, body);
        break;
      case "move_rejected":
        this.onRejected(link, body);
        break;
      case "strike":
        this.strikes++;
        log(`STRIKE ${body.strikes}/${body.max_strikes} at table ${body.table_id}: ${body.reason} ` +
            `(${body.detail}); the referee played ${body.fallback_pass ? "pass" : describe(body.fallback_cards.map(Number))}`);
        break;
      case "game_end":
        if (table && table.link === link) {
          const points = body.result.points[body.seat];
          table.score += points;
          table.requests.clear();
          log(`table ${body.table_id}, game ${body.game_index + 1} over: ${points >= 0 ? "+" : ""}${points}`);
        }
        break;
      case "table_end":
        if (table && table.link !== link) break; // it moved away from this referee
        this.tables.delete(body.table_id);
        this.tablesDone++;
        log(`table ${body.table_id} ended (${body.reason}): ${body.games_played} games, totals ${JSON.stringify(body.totals)}`);
        this.shareCapacity();
        if (link.retired && this.tablesOn(link) === 0) link.close();
        if (this.config.exitWhenIdle && this.tables.size === 0) this.leave("idle");
        break;
      case "error":
        log(`referee error ${body.code}: ${body.reason}${body.fatal ? " (fatal)" : ""}`);
        break;
      default:
        break; // pong, and anything newer than this bot
    }
  }

  answer(link, request) {
    const table = this.tables.get(request.table_id);
    if (table) table.requests.set(request.move_id, request);
    const { cards, note } = choose(request.view);
    this.moves++;
    this.sendMove(link, request, cards, note);
  }

  sendMove(link, request, cards, note = "") {
    const move = { table_id: request.table_id, game_index: request.game_index, move_id: request.move_id };
    if (cards === null) move.pass = true;
    else move.cards = cards;
    if (note) move.note = note;
    link.send({ move });
  }

  // A rejection names the request to answer (its move_id) and what is left for it; with
  // nothing left there is nothing to do (the referee plays its fallback, or the answer was
  // only late). This bot's answers come from the legal plays, so it only sees late ones.
  onRejected(link, rejected) {
    this.rejected++;
    log(`move rejected at table ${rejected.table_id}: ${rejected.code}: ${rejected.reason}`);
    const table = this.tables.get(rejected.table_id);
    const request = table && table.requests.get(rejected.move_id);
    if (!request || rejected.attempts_left === 0 || rejected.time_left_ms === 0) return;
    this.sendMove(link, request, request.view.can_pass ? null : request.view.legal_plays[0].cards.map(Number));
  }

  leave(reason) {
    if (this.leaving) return;
    this.leaving = true;
    if (this.links.length === 0) return this.bye();
    for (const link of this.links) {
      link.send({ goodbye: { reason } });
      link.close();
    }
    setTimeout(() => this.bye(), 5000).unref();
  }

  bye() {
    if (this.said) return;
    this.said = true;
    log(`bye: ${this.tablesDone} tables, ${this.moves} moves, ${this.rejected} rejected, ${this.strikes} strikes`);
    process.exit(0);
  }
}

if (require.main === module) {
  const bot = new Bot(settings(process.argv.slice(2), process.env));
  process.on("SIGINT", () => bot.leave("interrupted"));
  process.on("SIGTERM", () => bot.leave("terminated"));
  bot.start();
}

module.exports = { choose, cardText, settings };
