"""Tag2Text's API functions, declared once (``shared.api``): ``/tag_image`` and ``/tag_batch``, each an MCP tool."""

from __future__ import annotations

from apps.tag2text import actions
from apps.tag2text.checks import MAX_USER_TAG_CHARS, Tag2TextInputs, check_inputs
from shared.api import Endpoint, Input
from shared.context import DemoContext
from shared.uploads import api_file, api_files

THRESHOLD = Input("threshold", "number", "a tag is kept when its score is above this (person, man and woman keep "
                  "0.7)", default=actions.DEFAULT_THRESHOLD, minimum=0.0, maximum=1.0, example=0.68,
                  label="Tag threshold")
USER_TAGS = Input("user_tags", "text", "optional comma-separated tags that replace the recognised ones for the "
                  "caption (\"\" captions from the recognised tags)", default="", max_length=MAX_USER_TAG_CHARS,
                  example="", label="Your tags for the caption",
                  help="Optional, comma-separated: the caption is written from these instead of the recognised tags; "
                       "leave empty to caption from the recognised ones.")
RESULT = '{"name", "tags": [{"index", "name", "score"}], "caption", "user_tags", "caption_tags"}'

ENDPOINTS = (
    Endpoint(
        name="tag_image",
        summary="Tag one image with Tag2Text and caption it (the caption follows your tags if you give any).",
        inputs=(
            Input("image", "file", "the image (JPEG, PNG, WebP, BMP, GIF or TIFF; at most 25 MB by default and 50 "
                  'megapixels); over MCP send it as a data URI ("data:image/png;base64,..."); a web address '
                  "(http/https) is refused unless the operator started the hub with --allow-url-inputs",
                  argument="images", example="apps/tag2text/examples/beach.png",
                  help="JPEG, PNG, WebP, BMP, GIF or TIFF, at most 25 MB and 50 megapixels."),
            THRESHOLD,
            USER_TAGS,
        ),
        returns=f'{{"results": [{RESULT}], "threshold", "skipped"}}: one result for the image.',
        run="apps.tag2text.api:tag_image",
        check="apps.tag2text.api:check_image",
    ),
    Endpoint(
        name="tag_batch",
        summary="Tag and caption several images, or zip archives of images, with Tag2Text (one result per image, in "
                "order).",
        inputs=(
            Input("files", "files", "image files and/or zip archives of images, at most 64 images and 250 "
                  'megapixels in all; over MCP send each as a data URI ("data:image/png;base64,..."); web '
                  "addresses only where the operator allows them (--allow-url-inputs)", argument="images",
                  example=["apps/tag2text/examples/beach.png", "apps/tag2text/examples/fruit.png"],
                  label="Images or zip archives",
                  help="Several images and/or zip archives of images: at most 64 images and 250 megapixels in all."),
            THRESHOLD,
            USER_TAGS,
        ),
        returns='the same form as tag_image, one entry of "results" per image; "skipped" names unreadable zip '
                "members.",
        run="apps.tag2text.api:tag_batch",
        check="apps.tag2text.api:check_batch",
    ),
)


def check_image(ctx: DemoContext, image, threshold, user_tags) -> Tag2TextInputs:
    return check_inputs(api_file(image, "image"), threshold, user_tags)


def check_batch(ctx: DemoContext, files, threshold, user_tags) -> Tag2TextInputs:
    return check_inputs(api_files(files, "files"), threshold, user_tags)


def tag_image(ctx: DemoContext, image, threshold, user_tags) -> dict:
    return actions.tag_image(ctx, api_file(image, "image"), threshold, user_tags).to_dict()


def tag_batch(ctx: DemoContext, files, threshold, user_tags) -> dict:
    return actions.tag_batch(ctx, api_files(files, "files"), threshold, user_tags).to_dict()
