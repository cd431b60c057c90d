import Foundation
import GStreamer
import LecternCore
import LecternLibrary
import Logging

/// Turns a folder into books: walks it, reads every audio file's tags (off the D-Bus and player paths),
/// groups the files into books, orders them and hands each book to the library (which updates a book
/// imported before instead of adding it twice).
///
/// Grouping: files with an album tag form one book per album; files without one, one book per folder.
/// A book's identity is the folder holding its files plus its album tag, so importing again updates it.
/// Order: disc number, track number, then natural order of the path.
struct Importer: Sendable {
    /// The library's writes (new shelves, the books) go through it: see ``LibraryWriter``.
    let writer: LibraryWriter
    let opener: MediaOpener
    let logger: Logger

    struct Progress: Sendable {
        var done: Int
        var total: Int
        var current: String
    }

    /// Imports `folder` (or a single file), putting new books on `shelfPath` ("Series/Discworld"; nil = top level,
    /// or where they already are). Returns the ids of the books imported, in title order.
    func run(_ folder: URL, shelfPath: String?, progress: (Progress) -> Void) async throws -> [Int64] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory) else {
            throw LibraryError.notFound("no such file or folder: \(folder.path)")
        }
        let files = isDirectory.boolValue ? try MediaOpener.audioFiles(in: folder) : [folder]
        guard !files.isEmpty else { throw LibraryError.invalidArgument("no audio files in \(folder.path)") }
        let shelf = try await writer.write { library in try shelfPath.flatMap { try library.shelf(atPath: $0) } }

        var discovered: [(URL, MediaInfo)] = []
        for (index, file) in files.enumerated() {
            try Task.checkCancellation()
            progress(Progress(done: index, total: files.count, current: file.path))
            do {
                discovered.append((file, try await opener.discover(file)))
            } catch {
                logger.warning("skipping a file that can't be read", metadata: ["path": "\(file.path)", "error": "\(error)"])
            }
        }
        progress(Progress(done: files.count, total: files.count, current: ""))
        guard !discovered.isEmpty else { throw LibraryError.invalidArgument("none of the files in \(folder.path) can be played") }

        var books: [(String, Int64)] = []
        for group in Self.group(discovered) {
            let imported = book(from: group)
            let (id, created) = try await writer.write { try $0.importBook(imported, into: shelf) }
            logger.info(created ? "imported a book" : "updated a book",
                        metadata: ["id": "\(id)", "title": "\(imported.title)", "files": "\(imported.files.count)"])
            books.append((imported.title, id))
        }
        return books.sorted { NaturalOrder.areInIncreasingOrder($0.0, $1.0) }.map(\.1)
    }

    struct Group {
        var folder: URL
        var albumKey: String
        var files: [(URL, MediaInfo)]
    }

    /// One group per album tag, and per folder for untagged files.
    static func group(_ files: [(URL, MediaInfo)]) -> [Group] {
        var groups: [String: [(URL, MediaInfo)]] = [:]
        for (url, info) in files {
            let album = info.album?.trimmingCharacters(in: .whitespaces) ?? ""
            let key = album.isEmpty ? "folder:" + url.deletingLastPathComponent().path : "album:" + album
            groups[key, default: []].append((url, info))
        }
        return groups.map { key, members in
            let sorted = members.sorted(by: inBookOrder)
            let album = key.hasPrefix("album:") ? String(key.dropFirst(6)) : ""
            return Group(folder: commonFolder(of: sorted.map(\.0)), albumKey: album, files: sorted)
        }
    }

    static func inBookOrder(_ a: (URL, MediaInfo), _ b: (URL, MediaInfo)) -> Bool {
        let (da, db) = (a.1.discNumber ?? 0, b.1.discNumber ?? 0)
        if da != db { return da < db }
        let (ta, tb) = (a.1.trackNumber ?? Int.max, b.1.trackNumber ?? Int.max)
        if ta != tb { return ta < tb }
        return NaturalOrder.areInIncreasingOrder(a.0.path, b.0.path)
    }

    static func commonFolder(of files: [URL]) -> URL {
        var common = files[0].deletingLastPathComponent().pathComponents
        for file in files.dropFirst() {
            let components = file.deletingLastPathComponent().pathComponents
            common = Array(zip(common, components).prefix { $0 == $1 }.map(\.0))
        }
        return URL(fileURLWithPath: common.count <= 1 ? "/" : "/" + common.dropFirst().joined(separator: "/"))
    }

    private func book(from group: Group) -> ImportedBook {
        let first = group.files[0].1
        let title = group.albumKey.isEmpty ? group.folder.lastPathComponent : group.albumKey
        let author = first.albumArtist ?? first.artists.first
        let cover = group.files.lazy.compactMap { file in file.1.cover.map { (file.0, $0) } }.first
            .flatMap { opener.coverURL(for: $0.0, $0.1) } ?? opener.coverURL(for: group.files[0].0, nil)
        let files = group.files.map { url, info in
            ImportedBook.File(path: url.path, duration: info.duration?.microseconds, title: info.title,
                              artist: info.artists.isEmpty ? nil : info.artists.joined(separator: ", "),
                              album: info.album, albumArtist: info.albumArtist, composer: nil, genre: info.genre,
                              trackNumber: info.trackNumber.map(Int64.init), discNumber: info.discNumber.map(Int64.init),
                              chapters: chapters(of: url, info))
        }
        return ImportedBook(sourcePath: group.folder.path, albumKey: group.albumKey,
                            title: title.isEmpty ? "Untitled" : title, author: author, coverPath: cover?.path, files: files)
    }

    private func chapters(of url: URL, _ info: MediaInfo) -> [ImportedBook.ImportedChapter] {
        opener.chapters(of: url, info).map { .init(title: $0.title, start: $0.start.microseconds, end: $0.end?.microseconds) }
    }
}
