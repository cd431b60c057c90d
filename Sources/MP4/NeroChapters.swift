/// The Nero `chpl` atom (in `moov/udta`).
///
/// Layout: version (1 byte), flags (3); version 1 then has 4 more bytes before a 1-byte count as ffmpeg writes
/// it, while mp4v2 writes 1 reserved byte and a 32-bit count: the same bytes whenever the count fits in one
/// byte, so the count is read as the 32-bit value ending at byte 9, which suits both. Version 0 has the 1-byte
/// count right after the flags. Then per chapter: the start in 100 ns units (64-bit), a title length (1 byte)
/// and that many bytes of UTF-8.
enum NeroChapters {
    /// The chapters in file order, without ends.
    /// - Throws: ``MP4Error/malformed(_:)`` when the entries do not fit in the atom.
    static func read(_ atom: Atom, _ source: some ByteSource) throws(MP4Error) -> [MP4Chapter] {
        // A full list of the largest entries, and no more.
        let limit = 9 + MP4ChapterReader.maximumChapters * (8 + 1 + 255)
        var reader = ByteReader(try atom.payload(source, limit: limit), what: "chpl")
        let version = try reader.u8()
        try reader.skip(3)  // flags
        let count: UInt32
        if version == 0 {
            count = UInt32(try reader.u8())
        } else {
            try reader.skip(1)
            count = try reader.u32()
        }
        var chapters: [MP4Chapter] = []
        for _ in 0..<min(Int(count), MP4ChapterReader.maximumChapters) {
            let start = try reader.u64()
            let length = Int(try reader.u8())
            let title = Text.decode(try reader.bytes(length))
            chapters.append(MP4Chapter(title: title, start: Time.duration(start, timescale: 10_000_000)))
        }
        return chapters
    }
}

/// Chapter titles from bytes.
enum Text {
    /// UTF-16 when the bytes begin with a byte-order mark (as QuickTime text samples may), UTF-8 otherwise;
    /// invalid sequences become U+FFFD; trailing NULs are dropped.
    static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        if bytes.count >= 2, let bigEndian = byteOrder(bytes.first!, bytes[bytes.startIndex + 1]) {
            let body = bytes.dropFirst(2)
            var units: [UInt16] = []
            units.reserveCapacity(body.count / 2)
            var index = body.startIndex
            while index + 1 < body.endIndex {
                let high = UInt16(body[bigEndian ? index : index + 1])
                let low = UInt16(body[bigEndian ? index + 1 : index])
                units.append(high << 8 | low)
                index += 2
            }
            var text = String(decoding: units, as: UTF16.self)
            while text.last == "\0" { text.removeLast() }
            return text
        }
        var bytes = bytes
        while bytes.last == 0 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// true for FE FF (big-endian), false for FF FE, nil for no byte-order mark.
    private static func byteOrder(_ first: UInt8, _ second: UInt8) -> Bool? {
        switch (first, second) {
        case (0xFE, 0xFF): true
        case (0xFF, 0xFE): false
        default: nil
        }
    }
}
