import Foundation
import LecternCore

/// What a walk of a folder (or an import) left out, by kind: how many of each, and the first few paths.
///
/// ```swift
/// var skipped = SkippedFiles()
/// skipped.add(.empty, "/books/Dune/01.mp3")
/// skipped[.empty]?.count  // 1
/// ```
public struct SkippedFiles: Sendable, Equatable {
    /// Why an entry was left out. The raw values are what Library1's ImportFinished says (dbus/org.lectern.Library1.xml).
    public enum Kind: String, CaseIterable, Sendable {
        /// A file whose name is not that of an audio file (a cover, a text, a playlist).
        case notAudio = "not-audio"
        /// An audio file of no bytes.
        case empty
        /// A file or folder this process may not read.
        case unreadable
        /// A FIFO, a device or a socket: never opened (a read would block, or never end).
        case special
        /// A symbolic link: neither listed nor followed (no loop, no escape from the folder).
        case link
        /// A folder on another file system (a mount point, /proc): not entered.
        case otherFileSystem = "other-file-system"
        /// A folder deeper than a collection of books goes: not entered.
        case tooDeep = "too-deep"
        /// An audio file or folder whose name is not UTF-8 (an old disk's Latin-1): the library can't name it.
        case nameNotUTF8 = "name-not-utf8"
        /// An audio file the media reader could not read (no audio in it, damaged, a reader that crashed on it).
        case unplayable
        /// A copy of a file the library has from another folder, still there (docs/decisions/file-identity.md).
        case copy
    }

    public struct Entry: Sendable, Equatable {
        public var count = 0
        /// The first paths (at most ``SkippedFiles/examplesKept``).
        public var examples: [String] = []
    }

    /// Paths kept of each kind: enough to find them, never one per file of a large folder.
    public static let examplesKept = 3

    private var entries: [Kind: Entry] = [:]

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }

    public subscript(kind: Kind) -> Entry? { entries[kind] }

    /// The kinds found, in the order of ``Kind``, each with its entry.
    public var all: [(kind: Kind, entry: Entry)] {
        Kind.allCases.compactMap { kind in entries[kind].map { (kind, $0) } }
    }

    public mutating func add(_ kind: Kind, _ path: String) {
        entries[kind, default: Entry()].count += 1
        if entries[kind]!.examples.count < Self.examplesKept { entries[kind]!.examples.append(path) }
    }

    /// Adds what `other` counted.
    public mutating func merge(_ other: SkippedFiles) {
        for (kind, more) in other.entries {
            var entry = entries[kind, default: Entry()]
            entry.count += more.count
            entry.examples += more.examples.prefix(Self.examplesKept - entry.examples.count)
            entries[kind] = entry
        }
    }
}

/// Lists the audio files below a folder, reading directories by their descriptors (`openat`, `fstatat`): never
/// following a symbolic link, never opening anything but a folder (a FIFO named `x.mp3` stays closed), and keeping
/// count of what it leaves out (``SkippedFiles``). A name is read as bytes: one that is not UTF-8 can't be named
/// by the library (paths are text there) and is left out, reported with its folder.
public enum FolderWalk {
    /// How much of a folder a walk looks at before refusing it.
    public struct Limits: Sendable {
        /// Folders below the one walked.
        public var depth = 6
        /// Files and folders looked at.
        public var entries = 20_000
        /// Audio files found.
        public var files = 5_000

        public init(depth: Int = 6, entries: Int = 20_000, files: Int = 5_000) {
            self.depth = depth
            self.entries = entries
            self.files = files
        }
    }

    public static let audioExtensions: Set<String> = [
        "mp3", "m4a", "m4b", "mp4", "aac", "ogg", "oga", "opus", "flac", "wav", "mka", "webm", "aif", "aiff", "wv", "ape", "wma",
    ]

    public static func hasAudioExtension(_ name: String) -> Bool {
        audioExtensions.contains((name as NSString).pathExtension.lowercased())
    }

    /// The audio files below `folder` (subfolders included), in natural order of their relative paths, and what was
    /// left out. Hidden names (a leading dot: `.DS_Store`, AppleDouble `._01.mp3`) are passed over without a word.
    /// Throws when `folder` itself can't be read, or holds more than `limits` allow.
    public static func audioFiles(in folder: String, limits: Limits = Limits()) throws -> (files: [String], skipped: SkippedFiles) {
        let walk = try walked(folder, limits: limits, keepingFiles: true)
        let files = walk.files.sorted { NaturalOrder.areInIncreasingOrder($0.relative, $1.relative) }.map(\.path)
        return (files, walk.skipped)
    }

    /// A folder that holds audio files (directly, not in its subfolders), and how many.
    public struct AudioFolder: Sendable, Equatable {
        public var path: String
        public var files: Int

        public init(path: String, files: Int) {
            self.path = path
            self.files = files
        }
    }

    /// The folders below `folder` (itself included) that hold audio files, in natural order of their relative paths,
    /// and what was left out, walked as ``audioFiles(in:limits:)`` walks: the files are counted, their paths not
    /// kept (an import of 100,000 files would hold 100,000 paths). ``audioFiles(directlyIn:)`` lists a folder's when
    /// they are wanted.
    public static func audioFolders(in folder: String, limits: Limits = Limits()) throws -> (folders: [AudioFolder], skipped: SkippedFiles) {
        let walk = try walked(folder, limits: limits, keepingFiles: false)
        let folders = walk.folders.sorted { NaturalOrder.areInIncreasingOrder($0.relative, $1.relative) }
        return (folders.map { AudioFolder(path: $0.path, files: $0.files) }, walk.skipped)
    }

    /// The audio files in `folder` itself (not its subfolders), in natural order: those a walk takes of it. Empty
    /// when it can't be read (any more).
    public static func audioFiles(directlyIn folder: String) -> [String] {
        audioFiles(directlyIn: folder, noting: []).files
    }

    /// ``audioFiles(directlyIn:)``, and whether the folder holds an entry of any kind named one of `names`
    /// (lowercased), in any case: what a look for a file of such a name (a cover beside the book) can skip when not.
    /// A folder that can't be read may hold one (true): it may still be searchable (execute permission alone).
    public static func audioFiles(directlyIn folder: String, noting names: Set<String>) -> (files: [String], noted: Bool) {
        let limits = Limits(depth: 0, entries: .max, files: .max)
        guard let walk = try? walked(folder, limits: limits, keepingFiles: true, followingLink: false, noting: names) else {
            return ([], true)
        }
        return (walk.files.sorted { NaturalOrder.areInIncreasingOrder($0.relative, $1.relative) }.map(\.path), walk.noted)
    }

    /// The walk of `folder`, done. With `followingLink` the folder is opened even through a link (a user chose it).
    private static func walked(_ folder: String, limits: Limits, keepingFiles: Bool, followingLink: Bool = true,
                               noting names: Set<String> = []) throws -> Walk {
        let base = folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        let fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followingLink ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            throw OpenError(.failed, "Cannot read the folder \(base): \(String(cString: strerror(errno)))")
        }
        var walk = Walk(limits: limits, base: base, keepsFiles: keepingFiles)
        walk.noting = names
        var info = stat()
        walk.device = fstat(fd, &info) == 0 ? info.st_dev : 0
        try walk.read(fd, path: base, relative: "", depth: 0)
        return walk
    }

    /// Why a file named by a user (OpenUri, Import of one file) is not one to read: nil for an audio file this
    /// process may read. Links are followed (the user named the file); its name and the name it resolves to must both
    /// be an audio file's. `stat` only: nothing is opened.
    public static func reasonToSkip(file path: String) -> SkippedFiles.Kind? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            // A link that leads nowhere (or in a loop) is a link; anything else in the way, unreadable.
            var link = stat()
            return lstat(path, &link) == 0 && link.st_mode & S_IFMT == S_IFLNK ? .link : .unreadable
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .notAudio
        default: return .special
        }
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard hasAudioExtension(path), hasAudioExtension(resolved) else { return .notAudio }
        if info.st_size == 0 { return .empty }
        return faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) == 0 ? nil : .unreadable
    }

    /// One walk's state: what it found and left out so far.
    private struct Walk {
        let limits: Limits
        let base: String
        /// Whether ``files`` keeps each file's paths, or only ``folders`` their count.
        let keepsFiles: Bool
        var device: dev_t = 0
        var seen = 0
        var fileCount = 0
        var files: [(relative: String, path: String)] = []
        /// Each folder that holds audio files, with how many.
        var folders: [(relative: String, path: String, files: Int)] = []
        var skipped = SkippedFiles()
        /// Names (lowercased) looked for among the entries, and whether one was seen.
        var noting: Set<String> = []
        var noted = false

        init(limits: Limits, base: String, keepsFiles: Bool) {
            self.limits = limits
            self.base = base
            self.keepsFiles = keepsFiles
        }

        /// Reads the folder open as `fd` (closed here), `depth` below the base, and the folders in it.
        mutating func read(_ fd: Int32, path: String, relative: String, depth: Int) throws {
            guard let directory = fdopendir(fd) else {
                close(fd)
                skipped.add(.unreadable, path + "/")
                return
            }
            defer { closedir(directory) }
            var folders: [(name: String, path: String, relative: String)] = []
            var found = 0
            while let entry = readdir(directory) {
                let (bytes, type) = Self.name(of: entry)
                if bytes.first == UInt8(ascii: ".") { continue }  // ".", "..", and hidden names
                seen += 1
                guard seen <= limits.entries, fileCount <= limits.files else {
                    throw OpenError(.invalid, "\(base) holds too much to read as one (more than \(limits.entries) "
                        + "entries or \(limits.files) audio files): choose a book's own folder, or a shelf's")
                }
                guard let name = String(validating: bytes, as: UTF8.self) else {
                    let shown = path + "/" + Self.escaped(bytes)
                    if type == DT_DIR || FolderWalk.hasAudioExtension(String(decoding: bytes, as: UTF8.self)) {
                        skipped.add(.nameNotUTF8, shown)
                    } else {
                        skipped.add(.notAudio, shown)
                    }
                    continue
                }
                if !noting.isEmpty && !noted && noting.contains(name.lowercased()) { noted = true }
                let child = path + "/" + name
                var kind = type
                var info = stat()
                if kind == DT_UNKNOWN || (kind == DT_REG && FolderWalk.hasAudioExtension(name)) {
                    // The size of an audio file, or the type where readdir doesn't say it (some file systems).
                    guard fstatat(dirfd(directory), name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                        if errno == EACCES { skipped.add(.unreadable, child) }
                        continue  // else gone since readdir
                    }
                    kind = Self.type(of: info.st_mode)
                }
                switch Int(kind) {
                case Int(DT_DIR):
                    folders.append((name, child, relative + name + "/"))
                case Int(DT_LNK):
                    skipped.add(.link, child)
                case Int(DT_REG):
                    if !FolderWalk.hasAudioExtension(name) {
                        skipped.add(.notAudio, child)
                    } else if info.st_size == 0 {
                        skipped.add(.empty, child)
                    } else if faccessat(dirfd(directory), name, R_OK, AT_EACCESS) != 0 {
                        skipped.add(.unreadable, child)
                    } else {
                        if keepsFiles { files.append((relative + name, child)) }
                        found += 1
                        fileCount += 1
                    }
                default:
                    skipped.add(.special, child)
                }
            }
            if found > 0 { self.folders.append((relative, path, found)) }
            for folder in folders {
                guard depth < limits.depth else {
                    skipped.add(.tooDeep, folder.path + "/")
                    continue
                }
                // O_NOFOLLOW: a folder swapped for a link since readdir is not entered; O_DIRECTORY: nor anything else.
                let inner = openat(dirfd(directory), folder.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard inner >= 0 else {
                    skipped.add(errno == ELOOP ? .link : .unreadable, folder.path + "/")
                    continue
                }
                var info = stat()
                guard fstat(inner, &info) == 0, info.st_dev == device else {
                    close(inner)
                    skipped.add(.otherFileSystem, folder.path + "/")
                    continue
                }
                try read(inner, path: folder.path, relative: folder.relative, depth: depth + 1)
            }
        }

        private static func name(of entry: UnsafeMutablePointer<dirent>) -> ([UInt8], UInt8) {
            let bytes = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            return (bytes, entry.pointee.d_type)
        }

        private static func type(of mode: mode_t) -> UInt8 {
            switch mode & S_IFMT {
            case S_IFDIR: UInt8(DT_DIR)
            case S_IFREG: UInt8(DT_REG)
            case S_IFLNK: UInt8(DT_LNK)
            default: UInt8(DT_FIFO)
            }
        }

        /// The name with each byte that is not part of valid UTF-8 written as \xNN: "Les Mis\xE9rables.mp3".
        static func escaped(_ bytes: [UInt8]) -> String {
            var shown = ""
            var rest = bytes[...]
            while !rest.isEmpty {
                // The longest valid run, then one byte escaped.
                var end = rest.endIndex
                while end > rest.startIndex, String(validating: rest[rest.startIndex..<end], as: UTF8.self) == nil { end -= 1 }
                shown += String(decoding: rest[rest.startIndex..<end], as: UTF8.self)
                guard end < rest.endIndex else { break }
                shown += "\\x" + String(format: "%02X", rest[end])
                rest = rest[(end + 1)...]
            }
            return shown
        }
    }
}
