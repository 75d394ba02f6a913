"""The music app: songs, albums, liked songs and playlists.

Songs are identified by ``song_id``, albums by ``album_id``, playlists by ``playlist_id``.
A playlist's tracks are addressed by their ``position`` (1-based), as in streaming APIs, so a
playlist listing is not a second source of song ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypedDict, TypeVar, cast

from pydantic import Field

from hyperplan.demo_world.apps.base import App, like, require_text
from hyperplan.demo_world.store import InvalidArgumentError

# fields that several results share, described once
_SongId = Annotated[int, Field(description="Id of the song")]
_SongTitle = Annotated[str, Field(description="Title of the song")]
_ArtistName = Annotated[str, Field(description="Name of the performing artist")]
_AlbumId = Annotated[
    int, Field(description="Id of the album record (a release that groups songs)")
]
_PlaylistId = Annotated[int, Field(description="Id of the playlist in the user's library")]
_PlaylistName = Annotated[str, Field(description="Name of the playlist")]


class SongSummary(TypedDict):
    """A song in a search result."""

    song_id: _SongId
    title: _SongTitle
    artist_name: _ArtistName
    album_title: Annotated[str, Field(description="Title of the album the song is on")]
    duration_seconds: Annotated[int, Field(description="Length of the song in seconds")]


class SongDetails(SongSummary):
    """Every detail of a song."""

    album_id: Annotated[int, Field(description="Id of the album record the song is on")]
    genre: Annotated[str, Field(description="Genre of the song")]
    play_count: Annotated[int, Field(description="How many times the song was played")]
    liked: Annotated[bool, Field(description="Whether the user has liked the song")]


class LikedSong(TypedDict):
    """A song the user has liked."""

    song_id: Annotated[int, Field(description="Id of the liked song")]
    title: Annotated[str, Field(description="Title of the liked song")]
    artist_name: _ArtistName


class AlbumSummary(TypedDict):
    """An album in a search result."""

    album_id: _AlbumId
    album_title: Annotated[str, Field(description="Title of the album")]
    artist_name: Annotated[str, Field(description="Name of the album's artist")]
    release_year: Annotated[int, Field(description="Year the album was released")]


class AlbumSong(TypedDict):
    """A song of an album."""

    song_id: _SongId
    title: _SongTitle


class AlbumDetails(AlbumSummary):
    """An album with its songs."""

    songs: Annotated[list[AlbumSong], Field(description="The album's songs in order")]
    saved: Annotated[bool, Field(description="Whether the album is saved in the library")]


class PlaylistSummary(TypedDict):
    """A playlist of the user's library."""

    playlist_id: _PlaylistId
    playlist_name: _PlaylistName
    song_count: Annotated[int, Field(description="Number of songs in the playlist")]


class Track(TypedDict):
    """A song at one position of a playlist."""

    position: Annotated[int, Field(description="1-based position of the track in the playlist")]
    title: Annotated[str, Field(description="Title of the song at this position")]
    artist_name: Annotated[str, Field(description="Artist of the song at this position")]


class PlaylistDetails(TypedDict):
    """A playlist with its tracks."""

    playlist_id: _PlaylistId
    playlist_name: _PlaylistName
    tracks: Annotated[list[Track], Field(description="The playlist's tracks in order")]


class SongLike(TypedDict):
    """Whether a song is liked after the call."""

    song_id: _SongId
    liked: Annotated[bool, Field(description="Whether the song is now liked")]


class AlbumSave(TypedDict):
    """Whether an album is saved after the call."""

    album_id: _AlbumId
    saved: Annotated[bool, Field(description="Whether the album is now saved")]


class NewPlaylist(TypedDict):
    """A newly created playlist."""

    playlist_id: Annotated[int, Field(description="Id of the new playlist in the user's library")]
    playlist_name: Annotated[str, Field(description="Name of the new playlist")]


class PlaylistChange(TypedDict):
    """A playlist after a change."""

    playlist_id: Annotated[
        int, Field(description="Id of the changed playlist in the user's library")
    ]
    song_count: Annotated[int, Field(description="Number of songs now in the playlist")]


_SONG = ("SELECT s.song_id, s.title, s.artist_name, a.album_title, s.duration_seconds "
         "FROM songs s JOIN albums a ON a.album_id = s.album_id")


_MARK_DOC = """{summary}

    Args:
        access_token: Access token from music.login.
        {what}_id: Which {what} to {verb}, by its {what} id from music.search_{what}s.

    Returns:
        The {what} id and its {flag} flag.
    """

_Tool = TypeVar("_Tool", bound=Callable[..., Any])


def _mark_tool(summary: str, verb: str, what: str, flag: str) -> Callable[[_Tool], _Tool]:
    """Describe a tool that sets or clears a mark (like, unlike, save) on the ``what`` (song,
    album) it is given by id: ``summary``, its arguments and the ``flag`` it returns (the
    tool's description, as a docstring would)."""

    def describe(tool: _Tool) -> _Tool:
        tool.__doc__ = _MARK_DOC.format(summary=summary, verb=verb, what=what, flag=flag)
        return tool

    return describe


# what a mark table's error says when the mark is already set (True) or not set (False)
_MARK_ERRORS = {"liked_songs": {True: "already liked", False: "not in the liked songs"},
                "saved_albums": {True: "already saved", False: "not saved"}}


class MusicApp(App):
    """Music streaming: search, like, save albums and manage playlists."""

    name = "music"
    tool_names = (
        "login", "search_songs", "show_song", "search_albums", "show_album",
        "show_liked_songs", "show_playlist_library", "show_playlist", "like_song",
        "unlike_song", "save_album", "create_playlist", "add_song_to_playlist",
        "remove_track_from_playlist",
    )

    def search_songs(self, access_token: str, query: str) -> list[SongSummary]:
        """Search the music catalog for songs by title, artist or album.

        Args:
            access_token: Access token from music.login.
            query: Text to look for in song titles, artist names and album titles.

        Returns:
            The matching songs with their ids, titles, artists and albums.
        """
        self._auth(access_token)
        pattern = like(query)
        rows = self._store.rows(
            f"{_SONG} WHERE s.title LIKE ? ESCAPE '\\' OR s.artist_name LIKE ? ESCAPE '\\' "
            "OR a.album_title LIKE ? ESCAPE '\\' ORDER BY s.song_id", (pattern,) * 3)
        return cast(list[SongSummary], rows)

    def show_song(self, access_token: str, song_id: int) -> SongDetails:
        """Show every detail of one song.

        Args:
            access_token: Access token from music.login.
            song_id: Which song to show, by its song id from music.search_songs.

        Returns:
            The song's title, artist, album, genre, length, play count and liked flag.
        """
        self._auth(access_token)
        self._row("songs", "song_id", song_id, "song")
        row = self._store.rows(
            "SELECT s.song_id, s.title, s.artist_name, a.album_title, s.duration_seconds, "
            "s.album_id, s.genre, s.play_count, "
            "EXISTS(SELECT 1 FROM liked_songs l WHERE l.song_id = s.song_id) AS liked "
            "FROM songs s JOIN albums a ON a.album_id = s.album_id WHERE s.song_id = ?",
            (song_id,))[0]
        return cast(SongDetails, {**row, "liked": bool(row["liked"])})

    def search_albums(self, access_token: str, query: str) -> list[AlbumSummary]:
        """Search the music catalog for albums by title or artist.

        Args:
            access_token: Access token from music.login.
            query: Text to look for in album titles and artist names.

        Returns:
            The matching albums with their ids, titles, artists and release years.
        """
        self._auth(access_token)
        pattern = like(query)
        rows = self._store.rows(
            "SELECT album_id, album_title, artist_name, release_year FROM albums "
            "WHERE album_title LIKE ? ESCAPE '\\' OR artist_name LIKE ? ESCAPE '\\' "
            "ORDER BY album_id", (pattern, pattern))
        return cast(list[AlbumSummary], rows)

    def show_album(self, access_token: str, album_id: int) -> AlbumDetails:
        """Show an album with the list of its songs.

        Args:
            access_token: Access token from music.login.
            album_id: Which album to show, by its album id from music.search_albums.

        Returns:
            The album's title, artist, release year, songs and whether it is saved.
        """
        self._auth(access_token)
        album = self._row("albums", "album_id", album_id, "album")
        songs = self._store.rows(
            "SELECT song_id, title FROM songs WHERE album_id = ? ORDER BY song_id", (album_id,))
        saved = self._store.one("SELECT 1 FROM saved_albums WHERE album_id = ?", (album_id,))
        return cast(AlbumDetails, {**album, "songs": songs, "saved": saved is not None})

    def show_liked_songs(self, access_token: str) -> list[LikedSong]:
        """Show the songs the user has liked.

        Args:
            access_token: Access token from music.login.

        Returns:
            The liked songs with their ids, titles and artists.
        """
        self._auth(access_token)
        return cast(list[LikedSong], self._store.rows(
            "SELECT s.song_id, s.title, s.artist_name FROM liked_songs l "
            "JOIN songs s ON s.song_id = l.song_id ORDER BY s.song_id"))

    def show_playlist_library(self, access_token: str) -> list[PlaylistSummary]:
        """Show the user's playlists.

        Args:
            access_token: Access token from music.login.

        Returns:
            Every playlist of the user with its id, name and number of songs.
        """
        self._auth(access_token)
        return cast(list[PlaylistSummary], self._store.rows(
            "SELECT p.playlist_id, p.playlist_name, COUNT(t.song_id) AS song_count "
            "FROM playlists p LEFT JOIN playlist_tracks t ON t.playlist_id = p.playlist_id "
            "GROUP BY p.playlist_id ORDER BY p.playlist_id"))

    def show_playlist(self, access_token: str, playlist_id: int) -> PlaylistDetails:
        """Show one playlist with its tracks in order.

        Args:
            access_token: Access token from music.login.
            playlist_id: Which playlist to show, by its playlist id from
                music.show_playlist_library.

        Returns:
            The playlist's name and its tracks (position, title and artist of each song).
        """
        self._auth(access_token)
        playlist = self._row("playlists", "playlist_id", playlist_id, "playlist")
        tracks = self._store.rows(
            "SELECT t.position, s.title, s.artist_name FROM playlist_tracks t "
            "JOIN songs s ON s.song_id = t.song_id WHERE t.playlist_id = ? ORDER BY t.position",
            (playlist_id,))
        return cast(PlaylistDetails, {"playlist_id": playlist_id,
                                      "playlist_name": playlist["playlist_name"],
                                      "tracks": tracks})

    @_mark_tool("Like a song (add it to the user's liked songs).", "like", "song", "liked")
    def like_song(self, access_token: str, song_id: int) -> SongLike:
        self._set_mark(access_token, "liked_songs", "song", song_id, True)
        return {"song_id": song_id, "liked": True}

    @_mark_tool("Unlike a song (remove it from the user's liked songs).", "unlike", "song", "liked")
    def unlike_song(self, access_token: str, song_id: int) -> SongLike:
        self._set_mark(access_token, "liked_songs", "song", song_id, False)
        return {"song_id": song_id, "liked": False}

    @_mark_tool("Save an album to the user's library.", "save", "album", "saved")
    def save_album(self, access_token: str, album_id: int) -> AlbumSave:
        self._set_mark(access_token, "saved_albums", "album", album_id, True)
        return {"album_id": album_id, "saved": True}

    def create_playlist(self, access_token: str, playlist_name: str) -> NewPlaylist:
        """Create a new, empty playlist.

        Args:
            access_token: Access token from music.login.
            playlist_name: What to call the new playlist.

        Returns:
            The id and name of the new playlist.
        """
        self._auth(access_token)
        name = require_text(playlist_name, "playlist_name")
        new_id = self._store.insert("playlists", {"playlist_name": name,
                                                  "created_at": self._store.now()})
        return {"playlist_id": new_id, "playlist_name": name}

    def add_song_to_playlist(self, access_token: str, playlist_id: int,
                             song_id: int) -> PlaylistChange:
        """Add a song at the end of a playlist.

        Args:
            access_token: Access token from music.login.
            playlist_id: Which playlist to extend, by its playlist id from
                music.show_playlist_library.
            song_id: Which song to add, by its song id from music.search_songs.

        Returns:
            The playlist id and its new number of songs.
        """
        self._auth(access_token)
        self._row("playlists", "playlist_id", playlist_id, "playlist")
        self._row("songs", "song_id", song_id, "song")
        if self._store.one("SELECT 1 FROM playlist_tracks WHERE playlist_id = ? AND song_id = ?",
                           (playlist_id, song_id)):
            raise InvalidArgumentError(
                f"music: song {song_id} is already in playlist {playlist_id}")
        count = self._count(playlist_id)
        self._store.insert("playlist_tracks", {"playlist_id": playlist_id,
                                               "position": count + 1, "song_id": song_id})
        return {"playlist_id": playlist_id, "song_count": count + 1}

    def remove_track_from_playlist(self, access_token: str, playlist_id: int,
                                   position: int) -> PlaylistChange:
        """Remove the track at one position of a playlist; later tracks move up by one.

        Args:
            access_token: Access token from music.login.
            playlist_id: Which playlist to change, by its playlist id from
                music.show_playlist_library.
            position: 1-based position of the track to remove, from music.show_playlist.

        Returns:
            The playlist id and its new number of songs.
        """
        self._auth(access_token)
        self._row("playlists", "playlist_id", playlist_id, "playlist")
        count = self._count(playlist_id)
        if not 1 <= position <= count:
            raise InvalidArgumentError(
                f"music: playlist {playlist_id} has no track at position {position}")
        self._store.execute("DELETE FROM playlist_tracks WHERE playlist_id = ? AND position = ?",
                            (playlist_id, position))
        for later in range(position + 1, count + 1):
            self._store.execute(
                "UPDATE playlist_tracks SET position = ? WHERE playlist_id = ? AND position = ?",
                (later - 1, playlist_id, later))
        return {"playlist_id": playlist_id, "song_count": count - 1}

    def _set_mark(self, access_token: str, marks: str, what: str, value: int, on: bool) -> None:
        """Check the token and that the ``what`` (song, album) ``value`` exists, then add it to
        (``on``) or remove it from the ``marks`` table (liked songs, saved albums)."""
        self._auth(access_token)
        key = f"{what}_id"
        self._row(f"{what}s", key, value, what)
        present = self._store.one(f"SELECT 1 FROM {marks} WHERE {key} = ?", (value,)) is not None
        if present == on:
            raise InvalidArgumentError(f"music: {what} {value} is {_MARK_ERRORS[marks][on]}")
        if on:
            self._store.insert(marks, {key: value})
        else:
            self._store.execute(f"DELETE FROM {marks} WHERE {key} = ?", (value,))

    def _count(self, playlist_id: int) -> int:
        row = self._store.one("SELECT COUNT(*) AS n FROM playlist_tracks WHERE playlist_id = ?",
                              (playlist_id,))
        return int(row["n"]) if row else 0
