import FolderWatch
import Foundation
import GStreamer
import LecternCore
import LecternLibrary
import LecternMedia
import Logging
import Threads

/// Turns a folder into books: walks it, reads every audio file's tags (off the D-Bus and player paths, one file per
/// media reader at a time: as many readers as cores), groups the files into books, orders them and hands each book to
/// the library (which finds a book imported before, even moved or renamed, instead of adding it twice). A file whose
/// size and modification time are those the library has from the last import is not read again: its tags come from
/// the library. What blocks runs on threads of its own, never on the cooperative pool: the walk, the stats, the
/// fingerprints, chapters and covers on ``ThreadPool/fileSystem``, the library's reads on its reader threads.
///
/// Grouping: files with an album tag form one book per album; files without one, one book per folder. A file imported
/// alone joins the book that has it, or the book of its folder and album, and leaves that book's other files as they are.
/// A book's identity is the folder holding its files plus its album tag, or its files (by path or fingerprint).
/// Order: disc number, track number, then natural order of the path.
public struct Importer: Sendable {
    /// What the library has of each file already (read on the library's reader threads).
    let library: Library
    /// The library's writes (new shelves, the books) go through it: see ``LibraryWriter``.
    let writer: LibraryWriter
    let opener: MediaOpener
    let logger: Logger
    /// The most files read before their books are written (``batches(_:size:)``).
    var batchSize = Importer.batchFiles

    public init(library: Library, writer: LibraryWriter, opener: MediaOpener, logger: Logger) {
        self.library = library
        self.writer = writer
        self.opener = opener
        self.logger = logger
    }

    public struct Progress: Sendable {
        public var done: Int
        public var total: Int
        public var current: String
    }

    /// A file of the folder, as read now or as the library has it (unchanged since).
    struct Found: Sendable {
        var url: URL
        var file: ImportedBook.File
        /// The first of its artists: the book's author when there is no album artist.
        var leadArtist: String?
        /// Its embedded cover, cached (nil when it has none or was not read).
        var cover: URL?
        /// The series its tags name, and the part (nil when they don't, or it was not read).
        var series: (name: String, part: String?)?
    }

    /// The folder holds no audio file: a client's import fails with it; a library folder imported again is empty.
    struct NoAudioFiles: Error, CustomStringConvertible {
        var folder: String
        var description: String { "no audio files in \(folder)" }
    }

    /// How much of a folder an import walks: a collector's library, not the whole file system.
    static let folderLimits = FolderWalk.Limits(depth: 12, entries: 2_000_000, files: 500_000)

    /// Imports `folder` (or a single file), putting new books on `shelfPath` ("Series/Discworld"; nil = top level,
    /// or where they already are). Returns the ids of the books imported, in title order; `skipped` counts what was
    /// left out (even when the import fails).
    func run(_ folder: URL, shelfPath: String?, skipped: inout SkippedFiles,
             progress: (Progress) async -> Void) async throws -> [Int64] {
        // The folders holding audio files, counted: each batch lists its folders' files when it comes to them, so
        // that an import holds a batch's paths, not the whole walk's (docs/decisions/import-walk.md). Walked on a
        // thread for file-system work, with the mounts (each book's), as the stats and reads below.
        let (isDirectory, walked, reason, mounts) = try await ThreadPool.fileSystem.run {
            () throws -> (Bool, (folders: [FolderWalk.AudioFolder], skipped: SkippedFiles)?, SkippedFiles.Kind?, Mounts) in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory) else {
                throw LibraryError.notFound("no such file or folder: \(folder.path)")
            }
            if isDirectory.boolValue {
                return (true, try FolderWalk.audioFolders(in: folder.path, limits: Self.folderLimits), nil, Mounts.current())
            }
            return (false, nil, FolderWalk.reasonToSkip(file: folder.path), Mounts.current())
        }
        let folders: [FolderWalk.AudioFolder]
        if let walked {
            skipped.merge(walked.skipped)
            folders = walked.folders
        } else if let reason {
            skipped.add(reason, folder.path)
            throw LibraryError.invalidArgument("not an audio file to import (\(reason.rawValue)): \(folder.path)")
        } else {
            folders = [FolderWalk.AudioFolder(path: folder.deletingLastPathComponent().path, files: 1)]
        }
        let total = folders.reduce(0) { $0 + $1.files }
        guard total > 0 else { throw NoAudioFiles(folder: folder.path) }
        let shelf = try await writer.write { library in try shelfPath.flatMap { try library.shelf(atPath: $0) } }

        var books: [(title: String, id: Int64)] = []
        var seen: Set<Int64> = []
        var unchangedCount = 0
        var readAny = false
        // The books written by earlier batches, by group: a later batch's files of the same album (or untagged, of
        // the same folder) join the files of the earlier batches, the folders of which are kept.
        var written: [String: Int64] = [:]
        var earlierFolders: Set<String> = []
        var done = 0
        // The books written, new and found again: one line for the import (each book's is a debug line).
        var (created, updated) = (0, 0)
        defer {
            if created + updated > 0 {
                logger.info("imported books", metadata: ["folder": "\(folder.path)", "new": "\(created)", "updated": "\(updated)"])
            }
        }
        // A batch's books are written (on the writer's thread) while the next batch is listed and read: the two
        // overlap, and the next batch's files are grouped only once the batch before is written, its groups known.
        try await withThrowingTaskGroup(of: WrittenBatch.self) { writing in
            var isWriting = false
            // The batch being written, once written: its books are the import's, its groups those a later batch's
            // files join; a book of it that could not be written ends the import.
            func takeWritten() async throws {
                guard isWriting else { return }
                isWriting = false
                guard let batch = try await writing.next() else { return }
                for book in batch.books {
                    if book.outcome.created { created += 1 } else { updated += 1 }
                    book.outcome.duplicates.forEach { skipped.add(.copy, $0) }
                    written[book.key] = book.outcome.id
                    if !seen.contains(book.outcome.id) { books.append((book.title, book.outcome.id)) }
                    seen.insert(book.outcome.id)
                }
                if let failure = batch.failure { throw failure }
            }
            do {
                for batch in Self.batches(folders, size: batchSize) {
                    // Listed, stat'ed and looked up in the library (which reads a file again whose fingerprint is of
                    // an older kind) on a thread for file-system work.
                    // The folders listed with no image of a cover's name beside their files: no cover to look for.
                    let (files, unchanged, coverless) = try await ThreadPool.fileSystem.run { [library, batch] in
                        var paths: [String] = []
                        var coverless: Set<String> = []
                        if isDirectory {
                            for listed in batch {
                                let (files, noted) = FolderWalk.audioFiles(directlyIn: listed.path, noting: MediaOpener.lowercasedCoverNames)
                                paths += files
                                if !noted { coverless.insert(listed.path) }
                            }
                        } else {
                            paths = [folder.path]
                        }
                        let files = paths.map { URL(fileURLWithPath: $0, isDirectory: false) }
                        let stamps = files.compactMap { url in FileFingerprint.stamp(of: url.path).map { (path: url.path, stamp: $0) } }
                        return (files, try library.unchangedFiles(stamps), coverless)
                    }
                    var found = files.compactMap { url in unchanged[url.path].map(Found.init(known:)) }
                    let unread = files.filter { unchanged[$0.path] == nil }
                    // What this batch leaves out counts once the batches before it are written (an import that
                    // ends with a book of them never came to this one).
                    var left = SkippedFiles()
                    found += try await read(unread, done: done + files.count - unread.count, of: total,
                                            skipped: &left, progress: progress)
                    try await takeWritten()
                    skipped.merge(left)
                    unchangedCount += unchanged.count
                    done += batch.reduce(0) { $0 + $1.files }
                    readAny = readAny || !found.isEmpty
                    var groups: [Group] = []
                    for var group in Self.group(found) {
                        if let earlier = written[group.key] {
                            let before = try await library.reading { try $0.importedFiles(ofBook: earlier) }
                                .filter { earlierFolders.contains(Self.folder(of: $0.path)) }
                            group = Group(files: before.map(Found.init(known:)) + group.files, albumKey: group.albumKey)
                        }
                        groups.append(group)
                    }
                    writing.addTask {
                        // Their covers looked for beside their files, on a thread for file-system work, while the next
                        // batch is listed and read.
                        let made = await ThreadPool.fileSystem.run { [groups] in
                            groups.map { group in
                                (key: group.key, book: book(from: group, mounts: mounts, coverless: coverless, isPartial: !isDirectory,
                                                            importedFrom: folder.path))
                            }
                        }
                        return try await write(made, into: shelf)
                    }
                    isWriting = true
                    earlierFolders.formUnion(batch.map(\.path))
                }
                try await takeWritten()
            } catch {
                // The batch being written is written whatever ended the import: its books are counted, and a book of
                // it that could not be written is what ended it.
                try await takeWritten()
                throw error
            }
        }
        if unchangedCount > 0 {
            logger.info("files unchanged since they were read", metadata: ["folder": "\(folder.path)", "files": "\(unchangedCount)"])
        }
        guard readAny else { throw LibraryError.invalidArgument("none of the files in \(folder.path) can be played") }
        return books.sorted { NaturalOrder.areInIncreasingOrder($0.title, $1.title) }.map(\.id)
    }

    /// The most books written in one transaction, and the time after which it ends with the book being written (the
    /// next books go in the next one). One transaction a book cost a one-file book more than reading it (a commit, and
    /// the search index's new entries merged, each time); many share them. The time bounds how long the writer thread
    /// is held: a position save and a client's write (a bookmark, a rename) wait behind the transaction, never more
    /// than about 50 ms and a book. Reads never wait: they run beside the writer (WAL).
    static let writeLimits = (books: 500, time: Duration.milliseconds(50))

    /// A batch's books as written: each with its group's key and title, in order, and the book that could not be.
    struct WrittenBatch: Sendable {
        var books: [(key: String, title: String, outcome: ImportedBook.Outcome)] = []
        var failure: BookNotWritten?
    }

    /// Writes `made` (a batch's books, by their groups' keys), many to a transaction (``writeLimits``), until one
    /// can't be written: the books before it are.
    private func write(_ made: [(key: String, book: ImportedBook)], into shelf: Int64?) async throws -> WrittenBatch {
        var batch = WrittenBatch()
        var pending = made[...]
        while !pending.isEmpty {
            let chunk = Array(pending.prefix(Self.writeLimits.books).map(\.book))
            let result = try await writer.write { try $0.importBooks(chunk, into: shelf, for: Self.writeLimits.time) }
            for ((key, imported), outcome) in zip(pending, result.outcomes) {
                if !outcome.duplicates.isEmpty {
                    logger.notice("left out files the library has in another folder",
                                  metadata: ["book": "\(outcome.id)", "files": "\(outcome.duplicates)"])
                }
                logger.debug(outcome.created ? "imported a book" : "updated a book",
                             metadata: ["id": "\(outcome.id)", "title": "\(imported.title)", "files": "\(imported.files.count)"])
                batch.books.append((key, imported.title, outcome))
            }
            if let failure = result.failure {
                let bad = chunk[failure.index]
                logger.warning("a book could not be written", metadata: ["folder": "\(bad.sourcePath)", "title": "\(bad.title)",
                                                                         "error": "\(failure.error)"])
                batch.failure = BookNotWritten(folder: bad.sourcePath, albumKey: bad.albumKey, error: failure.error)
                return batch
            }
            pending = pending.dropFirst(result.outcomes.count)
        }
        return batch
    }

    /// A book of the import could not be written (its title, a rule of the library): the books before it are.
    struct BookNotWritten: Error, CustomStringConvertible {
        var folder: String
        var albumKey: String
        var error: LibraryError
        var description: String {
            "the book of \(folder)\(albumKey.isEmpty ? "" : " (album \"\(albumKey)\")") could not be written: \(error)"
        }
    }

    /// The fewest files an import reads before it writes their books: about what it holds at once, whatever the
    /// folder's size (a folder of more is one batch). What a batch held is freed in small pieces among those that stay,
    /// so a batch's size is also about what lecternd keeps after the import: 100,000 files (2,000 a folder) in batches
    /// of 5,000 left it 14 MB above where it was, in batches of 1,000 11 MB (docs/decisions/import-walk.md).
    static let batchFiles = 1_000

    /// The folder `path` is in, as the walk names it.
    static func folder(of path: String) -> String {
        String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
    }

    /// `folders` (in the walk's order) cut into runs of whole folders of at least `size` files but the last.
    static func batches(_ folders: [FolderWalk.AudioFolder], size: Int = batchFiles) -> [ArraySlice<FolderWalk.AudioFolder>] {
        var batches: [ArraySlice<FolderWalk.AudioFolder>] = []
        var start = folders.startIndex
        var files = 0
        for index in folders.indices {
            files += folders[index].files
            if files >= size {
                batches.append(folders[start...index])
                (start, files) = (index + 1, 0)
            }
        }
        if start < folders.endIndex { batches.append(folders[start...]) }
        return batches
    }

    /// Reads `urls`, each media reader one file at a time, and reports the progress (of `total` files, `done` of them
    /// before these). A file that can't be read (a reader crashed on it, it is no audio) is left out, counted in
    /// `skipped`.
    private func read(_ urls: [URL], done: Int, of total: Int, skipped: inout SkippedFiles,
                      progress: (Progress) async -> Void) async throws -> [Found] {
        var found: [Found] = []
        var done = done
        await progress(Progress(done: done, total: total, current: urls.first?.path ?? ""))
        try await withThrowingTaskGroup(of: (reader: Int, found: Result<Found, Skipped>, path: String).self) { group in
            var pending = urls.makeIterator()
            func start(on reader: Int) {
                guard let url = pending.next() else { return }
                group.addTask { (reader, await read(url, with: reader), url.path) }
            }
            for reader in 0..<opener.readerCount { start(on: reader) }
            while let result = try await group.next() {
                try Task.checkCancellation()
                switch result.found {
                case .success(let file): found.append(file)
                case .failure(let why): skipped.add(why.kind, result.path)
                }
                done += 1
                await progress(Progress(done: done, total: total, current: result.path))
                start(on: result.reader)
            }
        }
        return found
    }

    /// Why a file was not read.
    private struct Skipped: Error {
        var kind: SkippedFiles.Kind
    }

    /// One file, read by media reader `reader`, with its fingerprint; why not when it can't be read.
    private func read(_ url: URL, with reader: Int) async -> Result<Found, Skipped> {
        // Not readable, or no longer a regular file since the walk (a FIFO in its place would block the reader).
        guard let fingerprint = await ThreadPool.fileSystem.run({ FileFingerprint.of(url.path) }) else {
            logger.debug("skipping a file that can't be read", metadata: ["path": "\(url.path)"])
            return .failure(Skipped(kind: .unreadable))
        }
        let info: MediaInfo
        do {
            info = try await opener.discover(url, reader: reader)
        } catch {
            logger.debug("skipping a file that can't be read", metadata: ["path": "\(url.path)", "error": "\(error)"])
            if case MediaError.unreadable = error { return .failure(Skipped(kind: .unreadable)) }
            return .failure(Skipped(kind: .unplayable))
        }
        // On a thread for file-system work: the chapters read from the file, and the cover's bytes written to the
        // cache now (an import of many files holds none of them).
        let (fileChapters, cover) = await ThreadPool.fileSystem.run { [self] in
            (chapters(of: url, info), info.cover.flatMap { opener.coverURL(for: url, $0) })
        }
        let file = ImportedBook.File(path: url.path, duration: info.duration?.microseconds, title: info.title,
                                     artist: info.artists.isEmpty ? nil : info.artists.joined(separator: ", "),
                                     album: info.album, albumArtist: info.albumArtist, composer: nil, genre: info.genre,
                                     trackNumber: info.trackNumber.map(Int64.init), discNumber: info.discNumber.map(Int64.init),
                                     chapters: fileChapters, fingerprint: fingerprint,
                                     lyrics: LyricsFile.usableText(in: info.lyrics, of: url.path, logger: logger))
        let series = info.series.map { (name: $0, part: info.seriesPart) }
        return .success(Found(url: url, file: file, leadArtist: info.artists.first, cover: cover, series: series))
    }

    struct Group {
        /// The folder holding all its files.
        var folder: URL
        var albumKey: String
        /// In book order.
        var files: [Found]

        init(files: [Found], albumKey: String) {
            self.files = files.sorted(by: inBookOrder)
            self.albumKey = albumKey
            folder = commonFolder(of: self.files.map(\.url))
        }

        /// What picks its files out of an import: their album tag, or (untagged) their folder.
        var key: String { Importer.groupKey(album: albumKey, folder: folder) }
    }

    static func groupKey(album: String, folder: URL) -> String {
        album.isEmpty ? "folder:" + folder.path : "album:" + album
    }

    /// One group per album tag, and per folder for untagged files.
    static func group(_ files: [Found]) -> [Group] {
        var groups: [String: [Found]] = [:]
        for found in files {
            let key = groupKey(album: found.file.album?.trimmingCharacters(in: .whitespaces) ?? "",
                               folder: found.url.deletingLastPathComponent())
            groups[key, default: []].append(found)
        }
        return groups.map { key, members in
            Group(files: members, albumKey: key.hasPrefix("album:") ? String(key.dropFirst(6)) : "")
        }
    }

    static func inBookOrder(_ a: Found, _ b: Found) -> Bool {
        let (da, db) = (a.file.discNumber ?? 0, b.file.discNumber ?? 0)
        if da != db { return da < db }
        let (ta, tb) = (a.file.trackNumber ?? .max, b.file.trackNumber ?? .max)
        if ta != tb { return ta < tb }
        return NaturalOrder.areInIncreasingOrder(a.url.path, b.url.path)
    }

    static func commonFolder(of files: [URL]) -> URL {
        if files.count == 1 { return files[0].deletingLastPathComponent() }
        var common = files[0].deletingLastPathComponent().pathComponents
        for file in files.dropFirst() {
            let components = file.deletingLastPathComponent().pathComponents
            common = Array(zip(common, components).prefix { $0 == $1 }.map(\.0))
        }
        return URL(fileURLWithPath: common.count <= 1 ? "/" : "/" + common.dropFirst().joined(separator: "/"))
    }

    /// The book of `group`, with the mount its folder is on (``Book/mountPath``). A folder in `coverless` has no image
    /// beside its files to look for. `isPartial`: a file imported alone, one of its book's files perhaps. Its series:
    /// its first file's tags that name one, else its folders' layout (``SeriesFolder``) below `importedFrom`.
    private func book(from group: Group, mounts: Mounts, coverless: Set<String>, isPartial: Bool, importedFrom: String) -> ImportedBook {
        let first = group.files[0]
        let title = group.albumKey.isEmpty ? group.folder.lastPathComponent : group.albumKey
        let series = group.files.lazy.compactMap(\.series).first ?? SeriesFolder.series(of: group.folder.path, below: importedFrom)
        let cover = group.files.lazy.compactMap(\.cover).first
            ?? (coverless.contains(Self.folder(of: first.url.path)) ? nil : opener.coverURL(for: first.url, nil))
        return ImportedBook(sourcePath: group.folder.path, albumKey: group.albumKey,
                            title: title.isEmpty ? "Untitled" : title, author: first.file.albumArtist ?? first.leadArtist,
                            coverPath: cover?.path, files: group.files.map(\.file), mountPath: mounts.mountPoint(of: group.folder.path),
                            isPartial: isPartial, series: series?.name, seriesPart: series?.part)
    }

    private func chapters(of url: URL, _ info: MediaInfo) -> [ImportedBook.ImportedChapter] {
        opener.chapters(of: url, info).map { .init(title: $0.title, start: $0.start.microseconds, end: $0.end?.microseconds) }
    }
}

extension Importer.Found {
    /// A file as the library has it, not read now.
    init(known file: ImportedBook.File) {
        self.init(url: URL(fileURLWithPath: file.path, isDirectory: false), file: file,
                  leadArtist: file.artist?.components(separatedBy: ", ").first)
    }
}
