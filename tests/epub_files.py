"""Small EPUB 3 books for the tests, written as the specification lays them out (an
uncompressed ``mimetype`` first, ``META-INF/container.xml``, a package document with its
manifest and spine, XHTML chapters)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from urllib.parse import quote


def make_epub(chapters: Sequence[tuple[str, str]], *, title: str = "A Book", linear_no: Sequence[str] = (),
              encryption: str | None = None) -> bytes:
    """A book of ``chapters`` ((file name, XHTML body), in reading order); ``linear_no``:
    chapters the spine marks non-linear; ``encryption``: an encryption.xml algorithm URI."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        zf.writestr("META-INF/container.xml",
                    '<?xml version="1.0"?><container version="1.0" '
                    'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                    '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                    '</rootfiles></container>')
        items = ['<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>']
        spine = ['<itemref idref="nav"/>']
        for k, (name, _) in enumerate(chapters):
            items.append(f'<item id="c{k}" href="text/{quote(name)}" media-type="application/xhtml+xml"/>')
            linear = ' linear="no"' if name in linear_no else ""
            spine.append(f'<itemref idref="c{k}"{linear}/>')
        zf.writestr("OEBPS/content.opf",
                    '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
                    f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title>'
                    '</metadata>'
                    f'<manifest>{"".join(items)}</manifest><spine>{"".join(spine)}</spine></package>')
        zf.writestr("OEBPS/nav.xhtml", '<html xmlns="http://www.w3.org/1999/xhtml"><body><nav epub:type="toc">'
                                       '<ol><li>Contents entry</li></ol></nav></body></html>')
        for name, body in chapters:
            zf.writestr(f"OEBPS/text/{name}", f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{name}'
                                              f'</title></head><body>{body}</body></html>')
        if encryption is not None:
            zf.writestr("META-INF/encryption.xml",
                        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
                        f'<enc:EncryptionMethod Algorithm="{encryption}"/><enc:CipherData>'
                        '<enc:CipherReference URI="OEBPS/text/c1.xhtml"/></enc:CipherData></enc:EncryptedData>'
                        '</encryption>')
    return out.getvalue()
