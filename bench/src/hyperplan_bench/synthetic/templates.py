"""Text templates of the synthetic catalog: entity attributes (field words, JSON type,
descriptions) and the description sentences of each kind of tool and id field.

Placeholders: ``{w}`` the entity's words, ``{W}`` the same capitalised, ``{p}`` its plural,
``{b}`` the app's brand, ``{c}`` its currency, ``{v}`` the verb an id input serves."""

from __future__ import annotations

# (field words, JSON type, description templates; {w} = entity words, {b} = app brand)
ATTRIBUTES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("title", "string", ("Title of the {w}.", "Short human-readable title shown for the {w}.")),
    ("name", "string", ("Name of the {w}.", "Display name of this {w}.")),
    ("description", "string", ("Free-text description of the {w}.",
                               "Longer description of the {w}, plain text or markdown.")),
    ("notes", "string", ("Private notes kept with the {w}.", "Internal remarks about the {w}.")),
    ("status", "string", ("Current status of the {w}.", "Lifecycle state of the {w}.")),
    ("amount", "number", ("Total amount of the {w} in {c}.", "Monetary value of the {w}.")),
    ("quantity", "integer", ("How many units the {w} covers.", "Quantity of the {w}.")),
    ("is public", "boolean", ("Whether the {w} is visible to everyone.",)),
    ("tags", "array", ("Tags attached to the {w}.", "Free-form labels of the {w}.")),
    ("due date", "string", ("Due date of the {w} (YYYY-MM-DD).", "When the {w} is due.")),
    ("priority", "integer", ("Priority of the {w}, 1 (highest) to 5.",)),
    ("email", "string", ("Contact email of the {w}.", "Email address associated with the {w}.")),
    ("address", "string", ("Postal address of the {w}.",)),
    ("rating", "number", ("Average rating of the {w} from 0 to 5.", "Score given to the {w}.")),
    ("duration seconds", "integer", ("Length of the {w} in seconds.",)),
    ("url", "string", ("Public link to the {w}.", "Web address where the {w} can be viewed.")),
    ("color", "string", ("Colour used to display the {w}.",)),
    ("price", "number", ("Unit price of the {w} in {c}.", "Price of the {w}.")),
    ("language", "string", ("Language code of the {w}, e.g. en or de.",)),
    ("location", "string", ("Where the {w} takes place or is stored.",)),
)

SEARCH_DESCS = (
    "Search {p} in {b} by keyword, newest first.",
    "Find {p} matching a free-text query.",
    "List and filter the {p} of the current {b} user.",
    "Look up {p} whose title or description matches the query.",
)
SHOW_DESCS = (
    "Show the details of one {w}.",
    "Get a single {w} by its id.",
    "Retrieve all fields of a {w} in {b}.",
)
CREATE_DESCS = (
    "Create a new {w}.", "Add a {w} to {b} and return its id.", "Register a new {w}.",
)
UPDATE_DESCS = ("Update fields of an existing {w}.", "Edit a {w}; omitted fields are kept.")
DELETE_DESCS = ("Delete a {w} permanently.", "Remove a {w} from {b}.")
ID_IN_DESCS = (
    "The id of the {w}.", "Unique identifier of the {w} to {v}.",
    "Identifier of the {w}, as returned by search or create.", "{W} id.", "",
)
ID_OUT_DESCS = ("Unique identifier of the {w}.", "The {w} id.", "Id of the {w}.", "")
