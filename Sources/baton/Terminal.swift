import FoundationEssentials

/// Text as the CLI prints it for people: every character a terminal would act on instead of show
/// (C0 controls, DEL, C1 controls, and the bidirectional overrides and isolates that reorder what
/// follows) written visibly as an escape, so that a param value, an error or a line of output can
/// neither move the cursor, retitle the window, recolour the screen nor hide text. The CLI's own
/// colours are added after, around text already made visible. JSON, CSV and `show --output` are
/// data, printed as they are.
enum Terminal {
    /// `text` with each control character escaped: `\e`, `\a`, `\r`, `\t`, `\n`, `\x7f`,
    /// `\u{9B}`, `\u{202E}`; nothing else changes (a backslash stays one).
    static func visible(_ text: String) -> String {
        // Printable ASCII, most text, is seen in its bytes without decoding a scalar.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var shown = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) { shown.append(contentsOf: escape(scalar).unicodeScalars) } else { shown.append(scalar) }
        }
        return String(shown)
    }

    /// Whether a terminal acts on the scalar rather than showing it.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\u{1B}": #"\e"#
        case "\u{07}": #"\a"#
        case "\u{08}": #"\b"#
        case "\t": #"\t"#
        case "\n": #"\n"#
        case "\u{0B}": #"\v"#
        case "\u{0C}": #"\f"#
        case "\r": #"\r"#
        case "\0": #"\0"#
        default: scalar.value < 0x80 ? Format.printf(#"\x%02x"#, scalar.value) : #"\u{"# + String(scalar.value, radix: 16, uppercase: true) + "}"
        }
    }
}
