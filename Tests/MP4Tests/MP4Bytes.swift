import Foundation

/// Builds atom bytes for synthetic files.
///
/// ```swift
/// let file = MP4Bytes.atom("ftyp", Array("M4B ".utf8) + MP4Bytes.u32(0)) + MP4Bytes.atom("moov", [])
/// ```
enum MP4Bytes {
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
    static func u64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }

    /// An atom with a 32-bit size, or with `large` a 64-bit one (size field 1).
    static func atom(_ type: String, _ payload: [UInt8], large: Bool = false) -> [UInt8] {
        precondition(type.utf8.count == 4)
        if large {
            return u32(1) + Array(type.utf8) + u64(UInt64(16 + payload.count)) + payload
        }
        return u32(UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }

    /// An atom whose size field says `size` whatever its real length (0 = to the end, or a lie).
    static func atom(_ type: String, _ payload: [UInt8], declaredSize size: UInt32) -> [UInt8] {
        u32(size) + Array(type.utf8) + payload
    }

    /// A full atom: version, 24-bit flags, then `payload`.
    static func full(_ type: String, version: UInt8 = 0, _ payload: [UInt8], large: Bool = false) -> [UInt8] {
        atom(type, [version, 0, 0, 0] + payload, large: large)
    }

    static let ftyp = atom("ftyp", Array("M4B ".utf8) + u32(0x200) + Array("isomiso2M4B ".utf8))

    /// A Nero chpl atom. `layout` .ffmpeg: version 1, 4 reserved bytes, 1-byte count; .mp4v2: version 1,
    /// 1 reserved byte, 32-bit count; .version0: 1-byte count right after the flags. `count` overrides the count.
    enum NeroLayout { case ffmpeg, mp4v2, version0 }
    static func chpl(_ entries: [(title: String, start100ns: UInt64)], layout: NeroLayout = .ffmpeg,
                     count: UInt32? = nil) -> [UInt8] {
        let count = count ?? UInt32(entries.count)
        var payload: [UInt8]
        switch layout {
        case .ffmpeg: payload = [1, 0, 0, 0] + u32(0) + [UInt8(truncatingIfNeeded: count)]
        case .mp4v2: payload = [1, 0, 0, 0, 0] + u32(count)
        case .version0: payload = [0, 0, 0, 0, UInt8(truncatingIfNeeded: count)]
        }
        for entry in entries {
            let title = Array(entry.title.utf8.prefix(255))
            payload += u64(entry.start100ns) + [UInt8(title.count)] + title
        }
        return atom("chpl", payload)
    }
}

/// A synthetic movie: an audio track (no samples needed) whose tref/chap names a text chapter track, an
/// optional Nero chpl, all in memory.
///
/// ```swift
/// var movie = SyntheticMovie(chapters: [("One", 0), ("Two", 5_000)])
/// let data = movie.build()
/// ```
struct SyntheticMovie {
    enum TitleEncoding { case utf8, utf16BigEndian, utf16LittleEndian }

    /// Chapter track samples: title and start in `trackTimescale` units; nil for no chapter track.
    var chapters: [(title: String, start: UInt64)]? = []
    var movieTimescale: UInt32 = 1000
    /// mvhd duration in movieTimescale units (0 = unknown).
    var movieDuration: UInt64 = 30_000
    var trackTimescale: UInt32 = 1000
    /// The chapter track's total duration in its units (the last sample lasts until then).
    var trackDuration: UInt64 = 30_000
    /// Version 1 mvhd/mdhd/tkhd (64-bit times).
    var version1 = false
    /// 64-bit size headers on every atom.
    var largeAtoms = false
    /// co64 instead of stco.
    var wideOffsets = false
    /// All samples in one chunk (else one chunk each).
    var oneChunk = false
    /// One stts entry for all samples when they are evenly spaced.
    var runLengthTimes = false
    var encoding: TitleEncoding = .utf8
    /// Appends an `encd` atom to each sample, as Apple and ffmpeg do.
    var encdAtoms = true
    /// tref/chap names a picture track (id 3, handler vide) before the text track.
    var pictureTrackFirst = false
    /// Handler of the chapter track.
    var textHandler = "text"
    /// A chpl atom in moov/udta.
    var nero: [UInt8]?

    func build() -> Data {
        let b = MP4Bytes.self
        let large = largeAtoms
        func atom(_ type: String, _ payload: [UInt8]) -> [UInt8] { b.atom(type, payload, large: large) }
        func full(_ type: String, _ payload: [UInt8]) -> [UInt8] { b.full(type, version: version1 ? 1 : 0, payload, large: large) }
        func times(_ timescale: UInt32, _ duration: UInt64) -> [UInt8] {
            version1 ? b.u64(1) + b.u64(2) + b.u32(timescale) + b.u64(duration)
                : b.u32(1) + b.u32(2) + b.u32(timescale) + b.u32(UInt32(truncatingIfNeeded: duration))
        }
        func tkhd(_ id: UInt32) -> [UInt8] {
            full("tkhd", (version1 ? b.u64(1) + b.u64(2) : b.u32(1) + b.u32(2)) + b.u32(id) + [UInt8](repeating: 0, count: 60))
        }
        func hdlr(_ type: String) -> [UInt8] {
            b.full("hdlr", b.u32(0) + Array(type.utf8) + [UInt8](repeating: 0, count: 13), large: large)
        }

        // The samples, in mdat after ftyp.
        let samples: [[UInt8]] = (chapters ?? []).map { chapter in
            var text: [UInt8]
            switch encoding {
            case .utf8: text = Array(chapter.title.utf8)
            case .utf16BigEndian: text = [0xFE, 0xFF] + chapter.title.utf16.flatMap { b.u16($0) }
            case .utf16LittleEndian: text = [0xFF, 0xFE] + chapter.title.utf16.flatMap { Array(b.u16($0).reversed()) }
            }
            return b.u16(UInt16(text.count)) + text + (encdAtoms ? b.atom("encd", b.u32(0x100)) : [])
        }
        let mdatHeader = large ? 16 : 8
        var offsets: [UInt64] = []
        var position = UInt64(b.ftyp.count + mdatHeader)
        for sample in samples {
            offsets.append(position)
            position += UInt64(sample.count)
        }
        let mdat = atom("mdat", samples.flatMap { $0 })

        var moov = full("mvhd", times(movieTimescale, movieDuration) + [UInt8](repeating: 0, count: 80))
        let chapterIDs: [UInt32] = pictureTrackFirst ? [3, 2] : [2]
        moov += atom("trak", tkhd(1) + atom("tref", atom("chap", chapterIDs.flatMap { b.u32($0) }))
                     + atom("mdia", full("mdhd", times(44_100, 1_323_000) + b.u32(0)) + hdlr("soun")))
        if let chapters {
            let starts = chapters.map(\.start)
            let deltas = starts.indices.map { index in
                (index + 1 < starts.count ? starts[index + 1] : trackDuration) &- starts[index]
            }
            let stts: [UInt8]
            if runLengthTimes, let delta = deltas.first, deltas.dropLast().allSatisfy({ $0 == delta }),
               deltas.last == delta {
                stts = b.full("stts", b.u32(1) + b.u32(UInt32(deltas.count)) + b.u32(UInt32(delta)), large: large)
            } else {
                stts = b.full("stts", b.u32(UInt32(deltas.count)) + deltas.flatMap { b.u32(1) + b.u32(UInt32($0)) }, large: large)
            }
            let stsz = b.full("stsz", b.u32(0) + b.u32(UInt32(samples.count)) + samples.flatMap { b.u32(UInt32($0.count)) }, large: large)
            let chunkOffsets = oneChunk ? Array(offsets.prefix(1)) : offsets
            let stsc = oneChunk
                ? b.full("stsc", b.u32(1) + b.u32(1) + b.u32(UInt32(samples.count)) + b.u32(1), large: large)
                : b.full("stsc", b.u32(1) + b.u32(1) + b.u32(1) + b.u32(1), large: large)
            let stco = wideOffsets
                ? b.full("co64", b.u32(UInt32(chunkOffsets.count)) + chunkOffsets.flatMap { b.u64($0) }, large: large)
                : b.full("stco", b.u32(UInt32(chunkOffsets.count)) + chunkOffsets.flatMap { b.u32(UInt32($0)) }, large: large)
            let stsd = b.full("stsd", b.u32(1) + b.atom("text", [UInt8](repeating: 0, count: 8)), large: large)
            moov += atom("trak", tkhd(2) + atom("mdia",
                full("mdhd", times(trackTimescale, trackDuration) + b.u32(0)) + hdlr(textHandler)
                + atom("minf", atom("stbl", stsd + stts + stsc + stsz + stco))))
        }
        if pictureTrackFirst {
            // A chapter-artwork track: a sample table the reader must not take for titles.
            moov += atom("trak", tkhd(3) + atom("mdia", full("mdhd", times(1000, 30_000) + b.u32(0)) + hdlr("vide")
                + atom("minf", atom("stbl", b.full("stts", b.u32(1) + b.u32(1) + b.u32(30_000))
                    + b.full("stsz", b.u32(4) + b.u32(1)) + b.full("stsc", b.u32(1) + b.u32(1) + b.u32(1) + b.u32(1))
                    + b.full("stco", b.u32(1) + b.u32(0))))))
        }
        if let nero {
            moov += atom("udta", nero)
        }
        return Data(b.ftyp + mdat + atom("moov", moov))
    }
}
