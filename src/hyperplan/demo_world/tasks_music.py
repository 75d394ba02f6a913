"""Music tasks: single-app chains login -> lookup -> write."""

from __future__ import annotations

from hyperplan.demo_world.taskkit import (
    DemoTask,
    chain,
    liked_songs,
    playlist_songs,
    single,
    sub,
)
from hyperplan.demo_world.world import DemoWorld

MUSIC = {"app_name": "music"}


def _focus_has_clair_de_lune(world: DemoWorld) -> bool:
    return playlist_songs(world, "Focus") == [[14]]


def _album_saved(world: DemoWorld, album_id: int) -> bool:
    return bool(world.rows("SELECT 1 FROM saved_albums WHERE album_id = ?", album_id))


def _liking_tasks() -> list[DemoTask]:
    """Liking songs (t01, t02)."""
    return [
        DemoTask(
            "t01_like_song",
            "Like the song 'Bohemian Rhapsody' in my music app.",
            single("music.like_song", {**MUSIC, "query": "Bohemian Rhapsody",
                                       "title": "Bohemian Rhapsody"}),
            5, lambda w: 1 in liked_songs(w),
            notes="the search returns exactly one song"),
        DemoTask(
            "t02_like_song_pick_title",
            "Like the Beatles song 'Yesterday'.",
            single("music.like_song", {**MUSIC, "query": "Yesterday", "title": "Yesterday"}),
            5, lambda w: 5 in liked_songs(w) and not {7, 8} & liked_songs(w),
            notes="the search returns three songs; exactly one is titled 'Yesterday'"),
    ]


def _playlist_tasks() -> list[DemoTask]:
    """Playlist edits (t03-t05)."""
    return [
        DemoTask(
            "t03_add_song_to_playlist",
            "Add 'Wonderwall' to my 'Chill Vibes' playlist.",
            single("music.add_song_to_playlist", {
                **MUSIC, "playlist_name": "Chill Vibes", "query": "Wonderwall",
                "title": "Wonderwall"}),
            6, lambda w: playlist_songs(w, "Chill Vibes") == [[14, 15, 17, 11]],
            notes="playlist_name picks the playlist from the library, title the song"),
        DemoTask(
            "t04_create_playlist_and_add",
            "Create a new playlist called 'Focus' and add 'Clair de Lune' to it.",
            chain(
                sub("g1", "music.create_playlist", {"playlist_name": "Focus"}),
                sub("g2", "music.add_song_to_playlist",
                    {"query": "Clair de Lune", "title": "Clair de Lune"}, depends_on=("g1",)),
                **MUSIC),
            6, _focus_has_clair_de_lune,
            notes="g2 adds to the playlist_id that g1 returned"),
        DemoTask(
            "t05_remove_from_playlist",
            "Remove 'Hotel California' from my 'Road Trip' playlist.",
            single("music.remove_track_from_playlist", {
                **MUSIC, "playlist_name": "Road Trip", "title": "Hotel California"}),
            6, lambda w: playlist_songs(w, "Road Trip") == [[16, 1]],
            notes="tracks are removed by position; title picks the track of show_playlist"),
    ]


def _library_tasks() -> list[DemoTask]:
    """Library changes (t06-t08, one ambiguous)."""
    return [
        DemoTask(
            "t06_unlike_song",
            "Remove 'Someone Like You' from my liked songs.",
            single("music.unlike_song", {**MUSIC, "query": "Someone Like You",
                                         "title": "Someone Like You"}),
            5, lambda w: liked_songs(w) == {3, 18}),
        DemoTask(
            "t07_save_album",
            "Save the album 'Kind of Blue' to my music library.",
            single("music.save_album", {**MUSIC, "query": "Kind of Blue",
                                        "album_title": "Kind of Blue"}),
            5, lambda w: _album_saved(w, 14),
            notes="the album search returns exactly one album"),
        DemoTask(
            "t08_like_hallelujah",
            "Like Jeff Buckley's version of 'Hallelujah'.",
            single("music.like_song", {**MUSIC, "query": "Hallelujah", "title": "Hallelujah"}),
            5, lambda w: 10 in liked_songs(w) and 9 not in liked_songs(w),
            ambiguous=True,
            notes="two songs are titled 'Hallelujah' (Leonard Cohen, song 9; Jeff Buckley, "
                  "song 10); only the request names the artist"),
    ]


def music_tasks() -> list[DemoTask]:
    """The music tasks (8, one ambiguous)."""
    return [*_liking_tasks(), *_playlist_tasks(), *_library_tasks()]
