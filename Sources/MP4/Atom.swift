/// A four-character atom type ("moov", "trak"), big-endian as in the file.
struct FourCC: Hashable, CustomStringConvertible {
    let rawValue: UInt32

    init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// `code` must be four ASCII characters: a literal in this module, so anything else is our bug.
    init(_ code: StaticString) {
        precondition(code.utf8CodeUnitCount == 4, "a FourCC has four characters")
        var value: UInt32 = 0
        for index in 0..<4 {
            value = value << 8 | UInt32(code.utf8Start[index])
        }
        rawValue = value
    }

    /// Whether all four bytes are printable ASCII (or the © of iTunes tags), as in every real atom type.
    var isPlausible: Bool {
        (0..<4).allSatisfy { index in
            let byte = UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * index))
            return (0x20...0x7E).contains(byte) || byte == 0xA9
        }
    }

    var description: String {
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * $0)) }, as: UTF8.self)
    }

    static let ftyp = FourCC("ftyp"), moov = FourCC("moov"), mvhd = FourCC("mvhd"), trak = FourCC("trak")
    static let tkhd = FourCC("tkhd"), tref = FourCC("tref"), chap = FourCC("chap"), mdia = FourCC("mdia")
    static let mdhd = FourCC("mdhd"), hdlr = FourCC("hdlr"), minf = FourCC("minf"), stbl = FourCC("stbl")
    static let stts = FourCC("stts"), stsz = FourCC("stsz"), stsc = FourCC("stsc"), stco = FourCC("stco")
    static let co64 = FourCC("co64"), udta = FourCC("udta"), chpl = FourCC("chpl")
    static let text = FourCC("text"), sbtl = FourCC("sbtl"), subt = FourCC("subt"), soun = FourCC("soun")
    static let meta = FourCC("meta"), ilst = FourCC("ilst"), data = FourCC("data"), mean = FourCC("mean")
    static let name = FourCC("name"), freeform = FourCC("----")
    /// iTunes' `©mvn` (movement name) and `©mvi` (movement number): © is 0xA9, one byte in the file.
    static let movementName = FourCC(rawValue: 0xA96D_766E), movementNumber = FourCC(rawValue: 0xA96D_7669)

    /// Types an MP4 or QuickTime file may begin with.
    static let leading: Set<FourCC> = Set(([
        "ftyp", "styp", "moov", "mdat", "free", "skip", "wide", "pnot", "uuid", "pdin", "sidx", "junk",
    ] as [StaticString]).map { FourCC($0) })
}

/// An atom's header: where it is and how big, within a parent's bounds.
struct Atom {
    let type: FourCC
    /// Offset of the header in the file.
    let offset: UInt64
    /// 8, or 16 with a 64-bit size.
    let headerSize: UInt64
    /// Total size, header included, clamped to the parent.
    let size: UInt64
    /// The size in the header overran the parent (or the file): `size` was clamped.
    let isTruncated: Bool

    var payloadOffset: UInt64 { offset + headerSize }
    var payloadSize: UInt64 { size - headerSize }
    var end: UInt64 { offset + size }

    /// The payload, at most `limit` bytes of it.
    func payload(_ source: some ByteSource, limit: Int) throws(MP4Error) -> [UInt8] {
        try source.read(at: payloadOffset, count: Int(min(payloadSize, UInt64(max(limit, 0)))))
    }
}

/// Walks the atoms of a byte range, reading one header at a time.
enum AtomWalker {
    /// More atoms than any real container holds (a fragmented file has a few thousand at the top): a bound on
    /// the work a hostile file can cause.
    static let maximumAtoms = 100_000

    /// Calls `visit` with each atom in `start..<end`, in file order, until it returns false, the range ends, or
    /// a header cannot be read. Size 0 means "to the end of the parent"; size 1 means a 64-bit size follows.
    /// An atom whose size overruns the range is clamped (``Atom/isTruncated``) and is the last one visited; a
    /// size smaller than its header ends the walk, as nothing after it can be located.
    static func walk(
        _ source: some ByteSource, from start: UInt64, to end: UInt64,
        _ visit: (Atom) throws(MP4Error) -> Bool
    ) throws(MP4Error) {
        let end = min(end, source.size)
        var offset = start
        var visited = 0
        while offset < end, end - offset >= 8, visited < maximumAtoms {
            guard let atom = try header(source, at: offset, end: end) else { return }
            visited += 1
            guard try visit(atom), !atom.isTruncated else { return }
            offset = atom.end  // size >= headerSize >= 8: always moves forward
        }
    }

    /// The header at `offset`, or nil when it is unusable.
    static func header(_ source: some ByteSource, at offset: UInt64, end: UInt64) throws(MP4Error) -> Atom? {
        guard offset < end, end - offset >= 8 else { return nil }
        var reader = ByteReader(try source.read(at: offset, count: 8), what: "atom header")
        let size32 = try reader.u32()
        let type = FourCC(rawValue: try reader.u32())
        let available = end - offset
        var headerSize: UInt64 = 8
        var size: UInt64
        switch size32 {
        case 0:
            size = available
        case 1:
            guard available >= 16 else { return nil }
            var large = ByteReader(try source.read(at: offset + 8, count: 8), what: "64-bit atom size")
            size = try large.u64()
            headerSize = 16
        default:
            size = UInt64(size32)
        }
        guard size >= headerSize else { return nil }
        let isTruncated = size > available
        if isTruncated { size = available }
        return Atom(type: type, offset: offset, headerSize: headerSize, size: size, isTruncated: isTruncated)
    }

    /// The first child of `parent` with type `type`.
    static func child(_ source: some ByteSource, of parent: Atom, type: FourCC) throws(MP4Error) -> Atom? {
        var found: Atom?
        try walk(source, from: parent.payloadOffset, to: parent.end) { atom in
            if atom.type == type { found = atom }
            return found == nil
        }
        return found
    }

    /// The movie atom (`moov`) of an MP4 file.
    /// - Throws: ``MP4Error/notMP4(_:)`` when the source does not begin with an MP4 atom, ``MP4Error/malformed(_:)``
    ///   when it has no `moov` (a file truncated before it).
    static func movie(_ source: some ByteSource, name: String) throws(MP4Error) -> Atom {
        guard let first = try header(source, at: 0, end: source.size), FourCC.leading.contains(first.type) else {
            throw .notMP4("\(name) is not an MP4 file (it does not begin with an MP4 atom)")
        }
        var movie: Atom?
        try walk(source, from: 0, to: source.size) { atom in
            if atom.type == .moov { movie = atom }
            return movie == nil
        }
        guard let movie else {
            throw .malformed("\(name): no movie atom (moov); the file may be truncated")
        }
        return movie
    }

    /// The first atom reached by following `path` down from `parent`.
    static func descendant(_ source: some ByteSource, of parent: Atom, path: [FourCC]) throws(MP4Error) -> Atom? {
        var current = parent
        for type in path {
            guard let next = try child(source, of: current, type: type) else { return nil }
            current = next
        }
        return current
    }
}
