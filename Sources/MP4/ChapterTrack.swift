/// The QuickTime chapter track: a text track named by another track's `tref/chap`.
///
/// Its sample table gives each sample's time (`stts`, in the `mdhd` timescale), size (`stsz`) and place
/// (`stsc` samples per chunk, `stco`/`co64` chunk offsets). Each sample is a 16-bit length then the title,
/// possibly followed by atoms such as `encd` (ignored).
enum ChapterTrack {
    /// Handler types of tracks that can hold chapter titles. Apple files also name a picture track in
    /// `tref/chap` (chapter artwork): that one is skipped.
    static let textHandlers: Set<FourCC> = [.text, .sbtl, .subt]

    /// The chapters of the first usable text track named by a `tref/chap` (audio tracks asked first), without
    /// ends, and the end of that track's last sample; nil when there is none.
    static func read(_ tracks: [Track], _ source: some ByteSource) throws(MP4Error)
        -> (chapters: [MP4Chapter], end: Duration?)? {
        var candidates: [UInt32] = []
        for track in tracks where !track.chapterTrackIDs.isEmpty {
            for id in track.chapterTrackIDs where !candidates.contains(id) {
                candidates.append(id)
            }
        }
        for id in candidates {
            guard let target = tracks.first(where: { $0.id == id }), let media = target.media else { continue }
            let found = try MP4ChapterReader.ignoringDamage { () throws(MP4Error) in
                try read(media: media, source)
            }
            if let found { return found }
        }
        return nil
    }

    /// One text track's samples, from its `mdia`; nil if it is not a text track or lacks a table.
    static func read(media: Atom, _ source: some ByteSource) throws(MP4Error) -> (chapters: [MP4Chapter], end: Duration?)? {
        guard let hdlr = try AtomWalker.child(source, of: media, type: .hdlr) else { return nil }
        var handlerReader = ByteReader(try hdlr.payload(source, limit: 12), what: "hdlr")
        try handlerReader.skip(8)  // version, flags, component type
        guard textHandlers.contains(FourCC(rawValue: try handlerReader.u32())) else { return nil }
        guard let mdhd = try AtomWalker.child(source, of: media, type: .mdhd),
              let stbl = try AtomWalker.descendant(source, of: media, path: [.minf, .stbl]) else { return nil }
        let timescale = try MediaHeader(mdhd, source).timescale

        var tables: [FourCC: Atom] = [:]
        try AtomWalker.walk(source, from: stbl.payloadOffset, to: stbl.end) { atom in
            if tables[atom.type] == nil { tables[atom.type] = atom }
            return true
        }
        guard let stts = tables[.stts], let stsz = tables[.stsz], let stsc = tables[.stsc],
              let chunkOffsets = tables[.stco] ?? tables[.co64] else { return nil }

        let times = try sampleTimes(stts, source)
        let sizes = try sampleSizes(stsz, source)
        let chunks = try self.chunkOffsets(chunkOffsets, wide: chunkOffsets.type == .co64, source)
        let offsets = try sampleOffsets(try chunkRuns(stsc, source), chunks: chunks, sizes: sizes)
        let count = min(times.starts.count, sizes.count, offsets.count)

        var chapters: [MP4Chapter] = []
        chapters.reserveCapacity(count)
        for index in 0..<count {
            let title = try sampleText(at: offsets[index], size: sizes[index], source)
            chapters.append(MP4Chapter(title: title, start: Time.duration(times.starts[index], timescale: timescale)))
        }
        let end = count == times.starts.count ? times.end.map { Time.duration($0, timescale: timescale) } : nil
        return (chapters, end)
    }

    // MARK: Sample table

    private static var cap: Int { MP4ChapterReader.maximumChapters }

    /// Reads a table's version/flags, an optional 32-bit field (`stsz`'s uniform sample size), the declared entry
    /// count, then at most `cap` entries of `entrySize` bytes; fewer when the atom ends first.
    private static func table(_ atom: Atom, withField: Bool = false, entrySize: Int, _ source: some ByteSource)
        throws(MP4Error) -> (field: UInt32?, declared: Int, entries: ByteReader, count: Int) {
        let headerSize = withField ? 12 : 8
        var header = ByteReader(try atom.payload(source, limit: headerSize), what: "\(atom.type)")
        try header.skip(4)  // version, flags
        let field = withField ? try header.u32() : nil
        let declared = Int(try header.u32())
        let fitting = Int(min((atom.payloadSize - UInt64(headerSize)) / UInt64(entrySize), UInt64(cap)))
        let count = min(declared, fitting)
        let entries = ByteReader(
            try source.read(at: atom.payloadOffset + UInt64(headerSize), count: count * entrySize),
            what: "\(atom.type) entries"
        )
        return (field, declared, entries, count)
    }

    /// Start of each sample (at most `cap`) in timescale units, and the end of the last one.
    private static func sampleTimes(_ stts: Atom, _ source: some ByteSource) throws(MP4Error)
        -> (starts: [UInt64], end: UInt64?) {
        var (_, _, entries, count) = try table(stts, entrySize: 8, source)
        var starts: [UInt64] = []
        var time: UInt64 = 0
        var complete = true
        entryLoop: for _ in 0..<count {
            let samples = try entries.u32()
            let delta = UInt64(try entries.u32())
            for _ in 0..<samples {
                guard starts.count < cap else { complete = false; break entryLoop }
                starts.append(time)
                let (next, overflow) = time.addingReportingOverflow(delta)
                guard !overflow else { throw .malformed("stts: time overflows") }
                time = next
            }
        }
        return (starts, complete ? time : nil)
    }

    /// Size of each sample, at most `cap`.
    private static func sampleSizes(_ stsz: Atom, _ source: some ByteSource) throws(MP4Error) -> [UInt32] {
        // A non-zero uniform size (before the count) means no table follows.
        var (uniform, declared, entries, count) = try table(stsz, withField: true, entrySize: 4, source)
        if let uniform, uniform != 0 {
            return Array(repeating: uniform, count: min(declared, cap))
        }
        return try (0..<count).map { _ throws(MP4Error) in try entries.u32() }
    }

    /// Offset of each chunk, at most `cap`.
    private static func chunkOffsets(_ atom: Atom, wide: Bool, _ source: some ByteSource) throws(MP4Error) -> [UInt64] {
        var (_, _, entries, count) = try table(atom, entrySize: wide ? 8 : 4, source)
        return try (0..<count).map { _ throws(MP4Error) in wide ? try entries.u64() : UInt64(try entries.u32()) }
    }

    /// `stsc` runs: from `firstChunk` (1-based) on, each chunk holds `samplesPerChunk` samples.
    private static func chunkRuns(_ stsc: Atom, _ source: some ByteSource) throws(MP4Error)
        -> [(firstChunk: UInt32, samplesPerChunk: UInt32)] {
        var (_, _, entries, count) = try table(stsc, entrySize: 12, source)
        return try (0..<count).map { _ throws(MP4Error) in
            let first = try entries.u32()
            let samples = try entries.u32()
            try entries.skip(4)  // sample description index
            return (first, samples)
        }
    }

    /// The file offset of each sample (at most as many as `sizes`): chunks in order, samples back to back.
    private static func sampleOffsets(
        _ runs: [(firstChunk: UInt32, samplesPerChunk: UInt32)], chunks: [UInt64], sizes: [UInt32]
    ) throws(MP4Error) -> [UInt64] {
        var offsets: [UInt64] = []
        for (index, run) in runs.enumerated() {
            let first = Int(run.firstChunk)
            let next = index + 1 < runs.count ? Int(runs[index + 1].firstChunk) : chunks.count + 1
            guard first >= 1, next > first else { throw .malformed("stsc: chunk runs out of order") }
            let upper = min(next, chunks.count + 1)
            guard first < upper else { break }  // runs past the last chunk
            for chunk in first..<upper {
                var position = chunks[chunk - 1]
                for _ in 0..<run.samplesPerChunk {
                    guard offsets.count < sizes.count else { return offsets }
                    offsets.append(position)
                    let (next, overflow) = position.addingReportingOverflow(UInt64(sizes[offsets.count - 1]))
                    guard !overflow else { throw .malformed("stco: offset overflows") }
                    position = next
                }
            }
        }
        return offsets
    }

    /// A text sample: a 16-bit length, then the title.
    private static func sampleText(at offset: UInt64, size: UInt32, _ source: some ByteSource) throws(MP4Error) -> String {
        guard size >= 2 else { return "" }
        var reader = ByteReader(try source.read(at: offset, count: Int(min(size, 2 + 0xFFFF))), what: "text sample")
        let length = Int(try reader.u16())
        return Text.decode(try reader.bytes(min(length, reader.remaining)))
    }
}
