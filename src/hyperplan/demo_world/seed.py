"""Tables and seeded initial data of the demo world (fixed, no randomness).

The data is written so that the tasks have the intended shapes: some searches return exactly
one result, some several with one exact title or relationship match, and a few are ambiguous
(two songs titled "Hallelujah", two "Groceries" notes, two contacts called Alex, two called
Sam).
"""

from __future__ import annotations

from typing import Any

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE access_tokens (
    token TEXT PRIMARY KEY, app_name TEXT NOT NULL, issued_minute INTEGER NOT NULL);
CREATE TABLE profile (
    user_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, username TEXT,
    birthday TEXT, home_city TEXT);
CREATE TABLE account_passwords (app_name TEXT PRIMARY KEY, password TEXT NOT NULL);
CREATE TABLE contacts (
    contact_id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
    phone_number TEXT NOT NULL, relationship TEXT NOT NULL DEFAULT '', birthday TEXT);
CREATE TABLE albums (
    album_id INTEGER PRIMARY KEY, album_title TEXT NOT NULL, artist_name TEXT NOT NULL,
    release_year INTEGER NOT NULL);
CREATE TABLE songs (
    song_id INTEGER PRIMARY KEY, title TEXT NOT NULL, artist_name TEXT NOT NULL,
    album_id INTEGER NOT NULL REFERENCES albums(album_id), genre TEXT NOT NULL,
    duration_seconds INTEGER NOT NULL, play_count INTEGER NOT NULL);
CREATE TABLE liked_songs (song_id INTEGER PRIMARY KEY REFERENCES songs(song_id));
CREATE TABLE saved_albums (album_id INTEGER PRIMARY KEY REFERENCES albums(album_id));
CREATE TABLE playlists (
    playlist_id INTEGER PRIMARY KEY, playlist_name TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE playlist_tracks (
    playlist_id INTEGER NOT NULL REFERENCES playlists(playlist_id),
    position INTEGER NOT NULL, song_id INTEGER NOT NULL REFERENCES songs(song_id),
    PRIMARY KEY (playlist_id, position));
CREATE TABLE notes (
    note_id INTEGER PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE note_shares (
    share_id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL REFERENCES notes(note_id),
    receiver_email TEXT NOT NULL, shared_at TEXT NOT NULL);
CREATE TABLE wallet (wallet_id INTEGER PRIMARY KEY, balance REAL NOT NULL, currency TEXT);
CREATE TABLE wallet_users (email TEXT PRIMARY KEY, display_name TEXT NOT NULL);
CREATE TABLE payment_cards (
    card_id INTEGER PRIMARY KEY, card_name TEXT NOT NULL, last_four_digits TEXT NOT NULL);
CREATE TABLE transactions (
    transaction_id INTEGER PRIMARY KEY, kind TEXT NOT NULL, counterparty_email TEXT,
    amount REAL NOT NULL, note TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE payment_requests (
    payment_request_id INTEGER PRIMARY KEY, direction TEXT NOT NULL,
    counterparty_email TEXT NOT NULL, amount REAL NOT NULL, note TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE messages (
    message_id INTEGER PRIMARY KEY, phone_number TEXT NOT NULL, direction TEXT NOT NULL,
    text TEXT NOT NULL, sent_at TEXT NOT NULL);
CREATE TABLE events (
    event_id INTEGER PRIMARY KEY, title TEXT NOT NULL, start_time TEXT NOT NULL,
    duration_minutes INTEGER NOT NULL, location TEXT NOT NULL DEFAULT '');
CREATE TABLE event_attendees (
    event_id INTEGER NOT NULL REFERENCES events(event_id), attendee_email TEXT NOT NULL,
    PRIMARY KEY (event_id, attendee_email));
"""

APP_PASSWORDS = {
    "music": "tune-4821",
    "notes": "jot-1937",
    "payments": "coin-5560",
    "messaging": "chat-7713",
    "calendar": "plan-2468",
}
USERNAME = "riley.quinn"

_CONTACTS = [  # name, email, phone, relationship, birthday
    ("Bob Lee", "bob.lee@example.com", "+1-555-0101", "friend", "1990-03-14"),
    ("Maria Garcia", "maria.garcia@example.com", "+1-555-0102", "coworker", "1988-11-02"),
    ("Alex Chen", "alex.chen@example.com", "+1-555-0103", "coworker", "1992-07-21"),
    ("Alex Morgan", "alex.morgan@example.com", "+1-555-0104", "cousin", "1995-01-30"),
    ("Jane Smith", "jane.smith@example.com", "+1-555-0105", "sister", "1993-05-09"),
    ("Jane Doe", "jane.doe@example.com", "+1-555-0106", "friend", "1991-09-17"),
    ("Sam Taylor", "sam.taylor@example.com", "+1-555-0107", "brother", "1998-06-01"),
    ("Sam Wilson", "sam.wilson@example.com", "+1-555-0108", "neighbor", "1985-12-24"),
    ("Carlos Diaz", "carlos.diaz@example.com", "+1-555-0109", "friend", "1989-04-11"),
    ("Priya Nair", "priya.nair@example.com", "+1-555-0110", "coworker", "1994-08-08"),
    ("John Smith", "john.smith@example.com", "+1-555-0111", "landlord", "1970-02-19"),
]

_ALBUMS = [  # title, artist, year
    ("A Night at the Opera", "Queen", 1975),
    ("Hotel California", "Eagles", 1976),
    ("Help!", "The Beatles", 1965),
    ("Now & Then", "Carpenters", 1973),
    ("Use Your Illusion II", "Guns N' Roses", 1991),
    ("Various Positions", "Leonard Cohen", 1984),
    ("Grace", "Jeff Buckley", 1994),
    ("(What's the Story) Morning Glory?", "Oasis", 1995),
    ("21", "Adele", 2011),
    ("Suite bergamasque", "Claude Debussy", 1905),
    ("Weightless", "Marconi Union", 2012),
    ("After Hours", "The Weeknd", 2020),
    ("Time Out", "The Dave Brubeck Quartet", 1959),
    ("Kind of Blue", "Miles Davis", 1959),
]

_SONGS = [  # title, artist, album_id, genre, seconds, plays
    ("Bohemian Rhapsody", "Queen", 1, "rock", 354, 9120),
    ("Love of My Life", "Queen", 1, "rock", 219, 4410),
    ("Hotel California", "Eagles", 2, "rock", 391, 8030),
    ("New Kid in Town", "Eagles", 2, "rock", 304, 2150),
    ("Yesterday", "The Beatles", 3, "pop", 125, 7700),
    ("Help!", "The Beatles", 3, "pop", 138, 5120),
    ("Yesterday Once More", "Carpenters", 4, "pop", 239, 3300),
    ("Yesterdays", "Guns N' Roses", 5, "rock", 196, 1900),
    ("Hallelujah", "Leonard Cohen", 6, "folk", 279, 6400),
    ("Hallelujah", "Jeff Buckley", 7, "rock", 414, 8800),
    ("Wonderwall", "Oasis", 8, "rock", 258, 9900),
    ("Someone Like You", "Adele", 9, "pop", 285, 9700),
    ("Rolling in the Deep", "Adele", 9, "pop", 228, 9300),
    ("Clair de Lune", "Claude Debussy", 10, "classical", 302, 5600),
    ("Weightless", "Marconi Union", 11, "ambient", 480, 2500),
    ("Blinding Lights", "The Weeknd", 12, "pop", 200, 9990),
    ("Take Five", "The Dave Brubeck Quartet", 13, "jazz", 324, 4700),
    ("So What", "Miles Davis", 14, "jazz", 562, 3900),
]

_PLAYLISTS = [("Road Trip", [3, 16, 1]), ("Chill Vibes", [14, 15, 17]), ("Workout", [16, 13])]

_NOTES = [  # title, text, created
    ("Book ideas", "A heist on a space station.", "2024-04-02T20:15:00"),
    ("Wifi password", "Guest network: quinn-guest, password: sunflower42",
     "2024-04-10T18:00:00"),
    ("Groceries", "milk, eggs, flour", "2024-05-01T08:30:00"),
    ("Groceries", "bread, apples, coffee", "2024-05-28T17:45:00"),
    ("Old passwords", "Do not keep passwords in notes.", "2023-12-01T10:00:00"),
    ("Meeting notes", "Q3 planning: hire two engineers.", "2024-05-30T11:00:00"),
]

_MESSAGES = [  # phone, direction, text, sent_at
    ("+1-555-0101", "received", "Are we still on for Friday?", "2024-05-31T18:02:00"),
    ("+1-555-0101", "sent", "Yes! call me later", "2024-05-31T18:05:00"),
    ("+1-555-0102", "received", "Can you review my slides?", "2024-05-31T09:12:00"),
    ("+1-555-0107", "sent", "See you at mom's on Sunday", "2024-05-30T20:40:00"),
]

_EVENTS = [  # title, start, minutes, location, attendees
    ("Team lunch", "2024-06-05T12:30:00", 60, "Luigi's", ["maria.garcia@example.com"]),
    ("Dentist", "2024-06-07T08:00:00", 30, "Smile Clinic", []),
    ("Team lunch", "2024-06-19T12:30:00", 60, "Cafe Rio", ["priya.nair@example.com"]),
    ("Yoga", "2024-06-05T18:00:00", 60, "Studio 4", []),
]


def seed_rows() -> dict[str, list[dict[str, Any]]]:
    """Rows of every table in insertion order (ids are 1, 2, ... in list order)."""
    rows: dict[str, list[dict[str, Any]]] = {
        "meta": [{"key": "clock_minutes", "value": 0}, {"key": "token_serial", "value": 0}],
        "profile": [{"user_id": 1, "first_name": "Riley", "last_name": "Quinn",
                     "username": USERNAME, "birthday": "1991-10-05", "home_city": "Portland"}],
        "account_passwords": [{"app_name": a, "password": p} for a, p in APP_PASSWORDS.items()],
        "contacts": [
            {"contact_id": i, "name": n, "email": e, "phone_number": p, "relationship": r,
             "birthday": b}
            for i, (n, e, p, r, b) in enumerate(_CONTACTS, 1)
        ],
        "albums": [{"album_id": i, "album_title": t, "artist_name": a, "release_year": y}
                   for i, (t, a, y) in enumerate(_ALBUMS, 1)],
        "songs": [
            {"song_id": i, "title": t, "artist_name": a, "album_id": al, "genre": g,
             "duration_seconds": s, "play_count": c}
            for i, (t, a, al, g, s, c) in enumerate(_SONGS, 1)
        ],
        "liked_songs": [{"song_id": s} for s in (3, 12, 18)],
        "saved_albums": [{"album_id": 9}],
        "playlists": [{"playlist_id": i, "playlist_name": n, "created_at": "2024-03-01T10:00:00"}
                      for i, (n, _) in enumerate(_PLAYLISTS, 1)],
        "playlist_tracks": [{"playlist_id": i, "position": pos, "song_id": s}
                            for i, (_, songs) in enumerate(_PLAYLISTS, 1)
                            for pos, s in enumerate(songs, 1)],
        "notes": [{"note_id": i, "title": t, "text": x, "created_at": c, "updated_at": c}
                  for i, (t, x, c) in enumerate(_NOTES, 1)],
        "wallet": [{"wallet_id": 1, "balance": 250.0, "currency": "USD"}],
        "wallet_users": [{"email": e, "display_name": n} for n, e, *_ in _CONTACTS],
        "payment_cards": [{"card_id": 1, "card_name": "Travel Visa", "last_four_digits": "4242"},
                          {"card_id": 2, "card_name": "Everyday Mastercard",
                           "last_four_digits": "5454"}],
        "transactions": [
            {"transaction_id": 1, "kind": "received", "counterparty_email": "bob.lee@example.com",
             "amount": 12.0, "note": "coffee", "created_at": "2024-05-20T08:00:00"},
            {"transaction_id": 2, "kind": "sent", "counterparty_email": "john.smith@example.com",
             "amount": 1200.0, "note": "rent", "created_at": "2024-05-31T09:00:00"},
        ],
        "payment_requests": [
            {"payment_request_id": 1, "direction": "incoming",
             "counterparty_email": "bob.lee@example.com", "amount": 18.5,
             "note": "movie tickets", "status": "pending", "created_at": "2024-05-29T21:00:00"},
            {"payment_request_id": 2, "direction": "incoming",
             "counterparty_email": "maria.garcia@example.com", "amount": 42.0,
             "note": "team lunch", "status": "pending", "created_at": "2024-05-30T13:30:00"},
            {"payment_request_id": 3, "direction": "incoming",
             "counterparty_email": "carlos.diaz@example.com", "amount": 10.0,
             "note": "coffee beans", "status": "paid", "created_at": "2024-05-10T10:00:00"},
        ],
        "messages": [{"message_id": i, "phone_number": p, "direction": d, "text": t,
                      "sent_at": s} for i, (p, d, t, s) in enumerate(_MESSAGES, 1)],
        "events": [{"event_id": i, "title": t, "start_time": s, "duration_minutes": m,
                    "location": loc} for i, (t, s, m, loc, _) in enumerate(_EVENTS, 1)],
        "event_attendees": [{"event_id": i, "attendee_email": e}
                            for i, (*_, people) in enumerate(_EVENTS, 1) for e in people],
    }
    return rows
