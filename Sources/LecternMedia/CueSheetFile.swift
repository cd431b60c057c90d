import Foundation
import LecternCore
import Logging

/// The chapters a CUE sheet beside a long file gives it, when the file has none of its own (``MediaOpener``
/// decides that). A sheet in the file's folder belongs to it when it is named like it (`book.cue` or `book.m4b.cue`
/// beside `book.m4b`, in any case) or its `FILE` line names it: the same name in any case, whatever the extension
/// (`FILE "book.wav" WAVE` beside `book.flac`, converted since). Sheets named like it are looked at first, then the
/// others, each in name order, at most ``maximumSheets``; the first that belongs decides:
///
/// - a sheet of one `FILE` gives its tracks as chapters (``CueSheet/chapters(endingAt:)``);
/// - a sheet of several `FILE`s describes several files, each one chapter already: it gives none (logged at debug);
/// - a sheet that cannot be used (not a regular file, over ``CueSheet/maximumSize``, not text, malformed, or a track
///   starting at or past the end of the file) gives none and is logged as a warning.
///
/// A sheet that is not named like the file and cannot be read as text can't be told to belong to it: passed over,
/// logged at debug. A look lists the file's folder (its names only, no stat): an import of a folder of n files
/// without chapters of their own lists it n times.
public enum CueSheetFile {
    public typealias Chapters = [(title: String, start: Duration, end: Duration?)]

    /// The most sheets read in one look for the sheet of a file.
    public static let maximumSheets = 8

    /// The chapters from the sheet beside `url` that belongs to it, the last ending at `duration` (nil when unknown:
    /// then no track is found past it); nil when no sheet belongs to it or (logged) the one that does gives none.
    public static func chapters(beside url: URL, duration: Duration?, logger: Logger) -> Chapters? {
        let folder = url.deletingLastPathComponent().path
        let audioName = url.lastPathComponent
        for sheet in sheets(in: folder, for: audioName) {
            let path = folder + (folder.hasSuffix("/") ? "" : "/") + sheet.name
            func leftOut(_ problem: some CustomStringConvertible, _ level: Logger.Level = .warning) {
                logger.log(level: level, "cannot take chapters from the cue sheet beside a file: left out",
                           metadata: ["sheet": "\(path)", "file": "\(url.path)", "error": "\(problem)"])
            }
            let text: String
            do throws(CueSheetError) {
                guard let bytes = try read(path) else { continue }
                text = try CueSheet.text(of: bytes)
            } catch {
                leftOut(error, sheet.isNamedLikeFile ? .warning : .debug)
                if sheet.isNamedLikeFile { return nil } else { continue }
            }
            let files = CueSheet.fileNames(in: text)
            guard sheet.isNamedLikeFile || files.contains(where: { names(audioName, $0) }) else { continue }
            guard files.count <= 1 else {
                leftOut("a sheet of \(files.count) files, not of one", .debug)
                return nil
            }
            do throws(CueSheetError) {
                let chapters = try CueSheet(text: text).chapters(endingAt: duration)
                if let duration, let last = chapters.last, last.start >= duration {
                    leftOut("a track starts at \(seconds(last.start)), not before the file's end at \(seconds(duration))")
                    return nil
                }
                return chapters
            } catch {
                leftOut(error)
                return nil
            }
        }
        return nil
    }

    /// Whether a sheet's `FILE` value (a name, maybe after a path) names the audio file `name`: the same name
    /// without its extension, in any case.
    static func names(_ name: String, _ fileValue: String) -> Bool {
        let named = fileValue.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        return (named as NSString).deletingPathExtension.lowercased() == (name as NSString).deletingPathExtension.lowercased()
    }

    /// The sheets (`.cue` in any case, not hidden) in `folder` to look at for the audio file `name`, in the order
    /// looked at: those named like it first.
    static func sheets(in folder: String, for name: String) -> [(name: String, isNamedLikeFile: Bool)] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        let ownNames: Set = [(name as NSString).deletingPathExtension.lowercased() + ".cue", name.lowercased() + ".cue"]
        var found: [(name: String, isNamedLikeFile: Bool)] = []
        while let entry = readdir(directory) {
            let bytes = withUnsafeBytes(of: &entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            guard bytes.first != UInt8(ascii: "."), let sheet = String(validating: bytes, as: UTF8.self),
                  sheet.lowercased().hasSuffix(".cue") else { continue }
            found.append((sheet, ownNames.contains(sheet.lowercased())))
        }
        return Array(found.sorted { ($0.isNamedLikeFile ? 0 : 1, $0.name) < ($1.isNamedLikeFile ? 0 : 1, $1.name) }
            .prefix(maximumSheets))
    }

    /// The bytes of the sheet at `path`; nil when there is no such file (any more).
    static func read(_ path: String) throws(CueSheetError) -> [UInt8]? {
        do throws(SideFile.Problem) {
            return try SideFile.bytes(at: path, limit: CueSheet.maximumSize)
        } catch {
            switch error {
            case .tooLarge(let size): throw .tooLarge(size)
            case .unreadable(let why): throw .unreadable(why)
            }
        }
    }

    /// "3723.493 s".
    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f s", Double(duration.microseconds) / 1_000_000)
    }
}
