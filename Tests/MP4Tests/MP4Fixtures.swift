import Foundation
import TestSupport

/// MP4 files with chapters made by ffmpeg, generated once per test process on first use and shared (read-only).
///
/// ```swift
/// let files = try await MP4Fixtures.shared()
/// let chapters = try MP4ChapterReader.chapters(of: files.url(.m4b))
/// ```
final class MP4Fixtures: Sendable {
    enum File: String, CaseIterable, Sendable {
        /// ffmpeg's ipod muxer (moov at the end): a QuickTime chapter track and a `chpl`.
        case m4b = "book.m4b"
        /// The same through the mp4 muxer.
        case mp4 = "book.mp4"
        /// The same with an .m4a name.
        case m4a = "book.m4a"
        /// `-movflags +faststart`: moov first, then the text samples at the start of mdat.
        case faststart = "faststart.m4b"
        /// No chapters at all.
        case plain = "plain.m4b"
    }

    let directory: URL

    func url(_ file: File) -> URL { directory.appendingPathComponent(file.rawValue) }

    func data(_ file: File) throws -> Data { try Data(contentsOf: url(file)) }

    /// The files, made on first use (chapters: ``ChapterBook``).
    static func shared() async throws -> MP4Fixtures {
        MP4Fixtures(directory: try await GeneratedFiles.directory("mp4-fixtures") { root in
            let withChapters = try ChapterBook.ffmpegInput(chaptersFile: root.appendingPathComponent("chapters.txt"))
                + ["-c:a", "aac"]
            func path(_ file: File) -> String { root.appendingPathComponent(file.rawValue).path }
            try AudioFiles.ffmpeg(withChapters + [path(.m4b)])
            try AudioFiles.ffmpeg(withChapters + ["-f", "mp4", path(.mp4)])
            try AudioFiles.ffmpeg(withChapters + [path(.m4a)])
            try AudioFiles.ffmpeg(withChapters + ["-movflags", "+faststart", path(.faststart)])
            try AudioFiles.ffmpeg(ChapterBook.sine + ["-c:a", "aac", path(.plain)])
        })
    }

    private init(directory: URL) {
        self.directory = directory
    }
}

// MARK: - Editing atoms of real files

/// Minimal atom surgery on ffmpeg's output, to make files ffmpeg cannot write (chpl only, a track only).
enum AtomSurgery {
    struct Located: Equatable {
        var type: String
        var offset: Int
        var size: Int
    }

    enum SurgeryError: Error { case notFound(String), unsupported(String) }

    /// The children of `start..<end` (32-bit sizes only, which is what ffmpeg writes for small files).
    static func children(_ data: Data, from start: Int, to end: Int) throws -> [Located] {
        var atoms: [Located] = []
        var offset = start
        while offset + 8 <= end {
            let size = Int(readU32(data, offset))
            let type = String(decoding: data[data.startIndex + offset + 4..<data.startIndex + offset + 8], as: UTF8.self)
            guard size >= 8, offset + size <= end else { throw SurgeryError.unsupported("atom \(type) size \(size)") }
            atoms.append(Located(type: type, offset: offset, size: size))
            offset += size
        }
        return atoms
    }

    /// The chain of atoms along `path` ("moov", "udta", "chpl"), outermost first.
    static func locate(_ data: Data, _ path: [String]) throws -> [Located] {
        var chain: [Located] = []
        var (start, end) = (0, data.count)
        for type in path {
            guard let atom = try children(data, from: start, to: end).first(where: { $0.type == type }) else {
                throw SurgeryError.notFound(path.joined(separator: "/"))
            }
            chain.append(atom)
            (start, end) = (atom.offset + 8, atom.offset + atom.size)
        }
        return chain
    }

    /// Renames the atom at `path` (same size), e.g. to "free" to hide it.
    static func rename(_ data: Data, _ path: [String], to type: String) throws -> Data {
        var data = data
        let atom = try locate(data, path).last!
        data.replaceSubrange(data.startIndex + atom.offset + 4..<data.startIndex + atom.offset + 8, with: Array(type.utf8))
        return data
    }

    /// Appends `atom` (complete bytes) to moov/udta, creating udta if needed. Only for files whose moov is the
    /// last top-level atom and whose udta (if any) is moov's last child: then nothing else moves and no chunk
    /// offset changes.
    static func appendToUserData(_ data: Data, _ atom: [UInt8]) throws -> Data {
        var data = data
        let moov = try locate(data, ["moov"])[0]
        guard moov.offset + moov.size == data.count else { throw SurgeryError.unsupported("moov is not last") }
        let last = try children(data, from: moov.offset + 8, to: moov.offset + moov.size).last
        var added = atom
        if let last, last.type == "udta" {
            writeU32(&data, last.offset, UInt32(last.size + added.count))
        } else {
            added = MP4Bytes.atom("udta", atom)
        }
        writeU32(&data, moov.offset, UInt32(moov.size + added.count))
        data.append(contentsOf: added)
        return data
    }

    static func readU32(_ data: Data, _ offset: Int) -> UInt32 {
        data[data.startIndex + offset..<data.startIndex + offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func writeU32(_ data: inout Data, _ offset: Int, _ value: UInt32) {
        data.replaceSubrange(data.startIndex + offset..<data.startIndex + offset + 4, with: MP4Bytes.u32(value))
    }
}
