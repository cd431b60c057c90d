import Foundation
import GStreamer
import LecternCore
import Logging
import MP4
#if canImport(Glibc)
import Glibc
#endif
import Threads

/// Turns what a client asks to open (a file, a folder, a file:// URI; an http or https stream) into queue items: checks it,
/// lists a folder's audio files in natural order, reads tags with a ``MediaReader`` (GStreamer's discoverer, in a
/// child process, never on the D-Bus thread, the player actor or the cooperative pool) and caches embedded covers
/// as files. The stats, the folder's walk, the LRC files, chapters and covers are read and written on
/// ``ThreadPool/fileSystem``: never on the cooperative pool either.
public final class MediaOpener: Sendable {
    /// What OpenUri takes: files, and streams over HTTP (GStreamer's souphttpsrc, with ranges when the server allows
    /// them). Rygel's MPRIS bridge offers `http-get` to control points for "http".
    public let supportedSchemes = ["file", "http", "https"]
    /// The audio types GStreamer decodes with the plugins lecternd needs (base, good, libav): MP3, AAC/M4B (libav),
    /// Ogg Vorbis and Opus, FLAC, WAV, Matroska/WebM audio. Rygel offers each as `http-get:*:TYPE:*`.
    public let supportedMimeTypes = [
        "audio/mpeg", "audio/mp4", "audio/x-m4b", "audio/aac", "audio/ogg", "audio/x-vorbis+ogg", "audio/opus",
        "audio/flac", "audio/x-flac", "audio/x-wav", "audio/wav", "audio/x-matroska", "audio/webm",
    ]

    private let coverDirectory: URL
    private let logger: Logger
    /// Each reads one file at a time, in a child of its own: an import reads with all of them at once.
    private let readers: [MediaReader]

    /// `readers`: at least one; the first reads what is opened; an import reads with all of them.
    public init(coverDirectory: URL, readers: [MediaReader], logger: Logger) {
        precondition(!readers.isEmpty, "a media opener needs a reader")
        self.coverDirectory = coverDirectory
        self.readers = readers
        self.logger = logger
    }

    /// How many files can be read at once.
    public var readerCount: Int { readers.count }

    /// The items to play for `uri` (a file:// URI or an absolute path), the first one discovered.
    /// Throws an ``OpenError`` a client can read; nothing is opened then.
    public func open(_ uri: String) async throws -> [MediaItem] {
        let (url, isDirectory) = try await Self.check(uri)
        let files = isDirectory ? try await ThreadPool.fileSystem.run { try Self.audioFiles(in: url) } : [url]
        guard let first = files.first else {
            throw OpenError(.invalid, "No audio files in \(url.path)")
        }
        let info: MediaInfo
        do {
            info = try await discover(first)
        } catch {
            throw OpenError(.invalid, "Cannot play \(first.path): \(error)")
        }
        return await ThreadPool.fileSystem.run { [self] in
            var items = files.map { MediaItem(id: 0, url: $0) }
            items[0] = item(for: first, info)
            // The LRC file beside each file wins over its tags; the tags of all but the first are read later.
            for index in items.indices {
                items[index].lyrics = LyricsFile.lyrics(beside: items[index].url, logger: logger) ?? items[index].lyrics
            }
            return items
        }
    }

    /// Plays `items` (files opened by URI, not a book of the library) in place of the current queue, and reads the
    /// tags of all but the first in the background. The caller leaves the current book first.
    public func play(_ items: [MediaItem], on player: Player) async {
        await player.open(items)
        discoverRemaining(items.dropFirst(), into: player)
    }

    /// Reads the tags of `items` in the background and hands each result to the player.
    private func discoverRemaining(_ items: some Collection<MediaItem>, into player: Player) {
        let pending = Array(items)
        guard !pending.isEmpty else { return }
        Task.detached(priority: .utility) { [self] in
            // The queue's ids are minted by the player; match by URL.
            let queue = player.view.state.queue
            for file in pending {
                guard let info = try? await discover(file.url),
                      let current = queue.first(where: { $0.url == file.url }) else { continue }
                // Its cover cached and its chapters read on a thread for file-system work.
                var updated = await ThreadPool.fileSystem.run { [self] in item(for: file.url, info) }
                updated.id = current.id
                updated.lyrics = current.lyrics ?? updated.lyrics  // an LRC file beside it, read at the open
                await player.updateItem(updated)
            }
        }
    }

    /// What `url` holds, read by reader number `reader` (below ``readerCount``).
    public func discover(_ url: URL, reader: Int = 0) async throws -> MediaInfo {
        try await readers[reader].read(url)
    }

    public func item(for url: URL, _ info: MediaInfo) -> MediaItem {
        MediaItem(id: 0, url: url, title: info.title, artists: info.artists, album: info.album,
                  albumArtists: info.albumArtist.map { [$0] } ?? [], trackNumber: info.trackNumber,
                  discNumber: info.discNumber, genre: info.genre, duration: info.duration,
                  artURL: coverURL(for: url, info.cover),
                  chapters: chapters(of: url, info).map { ChapterMark(title: $0.title, start: $0.start) },
                  lyrics: LyricsFile.lyrics(in: info.lyrics, of: url.path, logger: logger))
    }

    /// The file's own chapters, else those of the CUE sheet beside it (``CueSheetFile``); empty when neither gives
    /// any. The file's own win over any sheet; a sheet with a track past the file's end is left out.
    public func chapters(of url: URL, _ info: MediaInfo) -> CueSheetFile.Chapters {
        let own = ownChapters(of: url, info)
        guard own.isEmpty else { return own }
        return CueSheetFile.chapters(beside: url, duration: info.duration, logger: logger) ?? []
    }

    /// Chapters from GStreamer's table of contents (Matroska chapters, a FLAC file's embedded cue sheet), else
    /// (MP4/M4B, which GStreamer 1.22 doesn't expose) from the file's chapter atoms; empty when the file has none.
    private func ownChapters(of url: URL, _ info: MediaInfo) -> CueSheetFile.Chapters {
        if !info.chapters.isEmpty {
            return info.chapters.map { ($0.title, $0.start, $0.end) }
        }
        guard MediaInfo.isMP4(url), let chapters = try? MP4ChapterReader.chapters(of: url) else { return [] }
        return chapters.map { ($0.title, $0.start, $0.end) }
    }

    // MARK: - Paths

    /// The file or folder `uri` (a file:// URI or an absolute path) names, and whether it is a folder, once checked: it
    /// is there, and is a folder or an audio file. Throws an ``OpenError`` a client can read. Stat'ed on a thread for
    /// file-system work.
    public static func check(_ uri: String) async throws -> (url: URL, isDirectory: Bool) {
        let url = try fileURL(from: uri)
        return try await ThreadPool.fileSystem.run {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw OpenError(.notFound, "No such file or folder: \(url.path)")
            }
            // Never hand GStreamer a device, a FIFO (opening it blocks), /proc, or a file that is not audio (/etc/shadow,
            // a symlink to one): refused from its name and stat, before anything opens it.
            guard isDirectory.boolValue || isPlayableFile(url) else {
                throw OpenError(.invalid, "Not an audio file Lectern can play: \(url.path)")
            }
            return (url, isDirectory.boolValue)
        }
    }

    /// The http or https URL `uri` names, checked (a host, no credentials, not too long); nil when `uri` is not an
    /// http or https URI (a path or a file:// URI goes to ``check(_:)``). Throws an ``OpenError`` for one that cannot be
    /// played.
    public static func streamURL(from uri: String) throws -> URL? {
        let lowered = uri.prefix(8).lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else { return nil }
        guard uri.utf8.count <= 8192, !uri.utf8.contains(0) else { throw OpenError(.invalid, "The URI is too long (\(uri.utf8.count) bytes)") }
        guard let url = URL(string: uri), let host = url.host, !host.isEmpty else {
            throw OpenError(.invalid, "Not an http or https URI: \(uri)")
        }
        guard url.user == nil, url.password == nil else {
            throw OpenError(.notSupported, "Lectern plays streams without credentials in the URI")
        }
        return url
    }

    /// A stream as a queue item: not a file of the library, titled by its name in the URL (its own tags replace it
    /// when it plays), its length known once GStreamer has it.
    public static func streamItem(_ url: URL) -> MediaItem {
        let name = url.deletingPathExtension().lastPathComponent.removingPercentEncoding ?? ""
        return MediaItem(id: 0, url: url, title: name.isEmpty || name == "/" ? url.host : name)
    }

    public static func fileURL(from uri: String) throws -> URL {
        // First, in O(1): no path is longer than PATH_MAX (4096), even percent-encoded, and going through megabytes
        // (the NUL check, URL parsing) takes seconds during which no other call is answered.
        guard uri.utf8.count <= 3 * 4096 + 64 else { throw OpenError(.invalid, "The URI is too long (\(uri.utf8.count) bytes)") }
        guard !uri.isEmpty, !uri.utf8.contains(0) else { throw OpenError(.invalid, "The URI is empty") }
        if uri.hasPrefix("/") { return URL(fileURLWithPath: uri).standardizedFileURL }
        guard let url = URL(string: uri), let scheme = url.scheme?.lowercased() else {
            throw OpenError(.invalid, "Not a URI or an absolute path: \(uri)")
        }
        guard scheme == "file" else {
            throw OpenError(.notSupported, "Lectern opens file://, http:// and https:// URIs only, not \(scheme):")
        }
        guard url.host == nil || url.host == "" || url.host == "localhost" else {
            throw OpenError(.notSupported, "Lectern opens local files only, not files on \(url.host ?? "")")
        }
        return URL(fileURLWithPath: url.path).standardizedFileURL
    }

    /// Whether `url` is a file to play: an audio file name, which stays one once symlinks are resolved, naming a
    /// non-empty regular file this process may read.
    public static func isPlayableFile(_ url: URL) -> Bool {
        FolderWalk.reasonToSkip(file: url.path) == nil
    }

    /// The audio files below `folder` (subfolders included), in natural order of their relative paths
    /// (``FolderWalk``: links neither listed nor followed, hidden names and unreadable subfolders skipped).
    public static func audioFiles(in folder: URL, limits: FolderWalk.Limits = FolderWalk.Limits()) throws -> [URL] {
        try FolderWalk.audioFiles(in: folder.standardizedFileURL.path, limits: limits).files
            .map { URL(fileURLWithPath: $0, isDirectory: false) }
    }

    // MARK: - Covers

    /// The embedded cover written once to the cache (named by a hash of its bytes), else an image
    /// beside the file.
    public func coverURL(for file: URL, _ cover: MediaInfo.CoverImage?) -> URL? {
        if let cover, !cover.data.isEmpty {
            let ext = cover.mimeType.contains("png") ? "png" : "jpg"
            let target = coverDirectory.appendingPathComponent("\(fnv1a(cover.data)).\(ext)")
            if FileManager.default.fileExists(atPath: target.path) { return target }
            do {
                try FileManager.default.createDirectory(at: coverDirectory, withIntermediateDirectories: true)
                try cover.data.write(to: target, options: .atomic)
                return target
            } catch {
                logger.warning("cannot cache cover", metadata: ["path": "\(target.path)", "error": "\(error)"])
            }
        }
        // Paths joined as strings, not URLs: an import of one-file books looks once a book (Foundation's URL and
        // FileManager cost most of a look).
        let folder = file.deletingLastPathComponent().path
        for name in Self.coverNames {
            let candidate = folder + (folder.hasSuffix("/") ? "" : "/") + name
            if access(candidate, F_OK) == 0 { return URL(fileURLWithPath: candidate, isDirectory: false) }
        }
        return nil
    }

    /// The names of an image beside a file that is its cover, in the order looked for.
    public static let coverNames = ["cover.jpg", "cover.png", "folder.jpg", "folder.png", "front.jpg", "Cover.jpg", "Folder.jpg"]

    /// ``coverNames`` lowercased: a folder none of whose entries has one of these, in any case, has no cover beside
    /// its files (``FolderWalk/audioFiles(directlyIn:noting:)``), on a file system that ignores case too.
    public static let lowercasedCoverNames = Set(coverNames.map { $0.lowercased() })

    private func fnv1a(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
