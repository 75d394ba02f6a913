"""A small music world shared by the agent tests: three songs (two titled "Yesterday"), login
with a password, search, like (optionally broken) and add-to-library."""

from __future__ import annotations

from typing import Any, TypedDict

from hyperplan.catalog import Catalog, build_catalog
from hyperplan.importers.python_callables import load_python_callables

CREDENTIALS = {"email": "me@example.com", "password": "pw-secret"}


class Token(TypedDict):
    access_token: str


class Song(TypedDict):
    song_id: int
    title: str
    artist: str


class Liked(TypedDict):
    song_id: int
    liked: bool


class MusicWorld:
    """Three songs, two titled "Yesterday"; ``broken`` makes like_song fail."""

    def __init__(self, broken: bool = False) -> None:
        self.broken = broken
        self.liked: list[int] = []
        self.library: list[int] = []

    def login(self, email: str, password: str) -> Token:
        """Log in to the music app.

        Args:
            email: The user's email address.
            password: The account password.

        Returns:
            The access token of the session.
        """
        if password != "pw-secret":
            raise PermissionError("wrong password")
        return Token(access_token="tok-SECRET")

    def search_songs(self, access_token: str, query: str) -> list[Song]:
        """Search songs by title.

        Args:
            access_token: Access token from login.
            query: Words to search for in song titles.

        Returns:
            The matching songs.
        """
        self._auth(access_token)
        songs = [Song(song_id=1, title="Yesterday", artist="The Beatles"),
                 Song(song_id=2, title="Yesterday", artist="Leona Lewis"),
                 Song(song_id=3, title="Help", artist="The Beatles")]
        return [s for s in songs if query.lower() in s["title"].lower()]

    def like_song(self, access_token: str, song_id: int) -> Liked:
        """Like a song.

        Args:
            access_token: Access token from login.
            song_id: The id of the song to like.

        Returns:
            The liked song.
        """
        self._auth(access_token)
        if self.broken:
            raise RuntimeError("like service unavailable")
        self.liked.append(song_id)
        return Liked(song_id=song_id, liked=True)

    def add_song_to_library(self, access_token: str, song_id: int) -> Liked:
        """Add a song to the user's library.

        Args:
            access_token: Access token from login.
            song_id: The id of the song to add.

        Returns:
            The added song.
        """
        self._auth(access_token)
        self.library.append(song_id)
        return Liked(song_id=song_id, liked=False)

    def _auth(self, token: str) -> None:
        if token != "tok-SECRET":
            raise PermissionError("invalid access token")

    def tools(self) -> dict[str, Any]:
        return {f"music.{f.__name__}": f for f in
                (self.login, self.search_songs, self.like_song, self.add_song_to_library)}


def music_catalog(world: MusicWorld) -> Catalog:
    tools = world.tools()
    raw = load_python_callables(list(tools.values()), source="toy")
    return build_catalog([t.model_copy(update={"name": f"music.{t.name}"}) for t in raw.tools],
                         source="toy")
