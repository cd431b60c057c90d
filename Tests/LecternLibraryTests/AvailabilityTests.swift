import Foundation
import LecternLibrary
import Testing
import TestSupport

/// Files missing and books offline (Schema v9), on real files: a file gone is missing with its bookmark and the place
/// in it kept, present again when it is back; an offline book's files are never marked missing; the counts follow.
@Suite("Missing files and offline books")
struct AvailabilityTests {
    /// A book of three real files in `folder`, imported; its id and its files.
    func importRealBook(_ t: TestLibrary, _ folder: String) throws -> (Int64, [BookFile]) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for name in ["01.mp3", "02.mp3", "03.mp3"] { try Data(name.utf8).write(to: URL(fileURLWithPath: folder + "/" + name)) }
        let book = try t.library.add(importedBook(folder))
        return (book, try t.library.files(of: book))
    }

    @Test("A file gone is missing, its bookmark and place kept; back at its path, it is present again")
    func missingAndBack() throws {
        let t = try TestLibrary()
        let folder = t.directory.path + "/Books/Dune"
        let (book, files) = try importRealBook(t, folder)
        _ = try t.library.savePosition(of: book, file: files[1].id!, offset: 5_000)
        let bookmark = try t.library.addBookmark(to: book, file: files[1].id!, offset: 7_000, title: "Litany")
        #expect(try t.library.filesGone(under: t.directory.path + "/Books").isEmpty)

        try FileManager.default.removeItem(atPath: files[1].path)
        let gone = try t.library.filesGone(under: t.directory.path + "/Books")
        #expect(gone == [files[1].id!])
        #expect(try t.library.markMissing(gone) == [book])
        #expect(try t.library.markMissing(gone) == [], "marked once")
        #expect(try t.library.files(of: book).map(\.available) == [true, false, true])
        #expect(try t.library.availability() == LibraryAvailability(offlineBooks: 0, missingFiles: 1))
        #expect(try t.library.book(book).positionFileId == files[1].id, "the place stays in the missing file")
        #expect(try t.library.bookmarks(of: book).map { [$0.id, $0.fileId, $0.offset] } == [[bookmark.id, files[1].id, 7_000]], "its bookmark stays")

        // Back: the next import of the folder finds it at its path.
        try Data("02.mp3".utf8).write(to: URL(fileURLWithPath: files[1].path))
        #expect(try t.library.add(importedBook(folder)) == book)
        #expect(try t.library.files(of: book).map(\.available) == [true, true, true])
        #expect(try t.library.files(of: book).map(\.id) == files.map(\.id), "the same rows")
        #expect(try t.library.availability() == LibraryAvailability(offlineBooks: 0, missingFiles: 0))
    }

    @Test("A whole book's folder gone: every file missing; a path that is only a prefix is not below the folder")
    func folderGone() throws {
        let t = try TestLibrary()
        let (dune, _) = try importRealBook(t, t.directory.path + "/Books/Dune")
        let (messiah, _) = try importRealBook(t, t.directory.path + "/Books/Dune Messiah")
        try FileManager.default.removeItem(atPath: t.directory.path + "/Books/Dune")
        let gone = try t.library.filesGone(under: t.directory.path + "/Books/Dune")
        #expect(try t.library.markMissing(gone) == [dune])
        #expect(try t.library.files(of: dune).allSatisfy { !$0.available })
        #expect(try t.library.files(of: messiah).allSatisfy(\.available))
    }

    @Test("An offline book's files are not looked at, and it comes back untouched")
    func offlineIsUntouched() throws {
        let t = try TestLibrary()
        let (book, files) = try importRealBook(t, t.directory.path + "/Disk/Dune")
        _ = try t.library.savePosition(of: book, file: files[2].id!, offset: 9_000)
        let before = try t.library.book(book)
        #expect(try t.library.setOffline([book], true) == [book])
        #expect(try t.library.setOffline([book], true) == [], "already offline")
        #expect(try t.library.bookPlaces().map(\.offline) == [true])
        try FileManager.default.removeItem(atPath: t.directory.path + "/Disk")
        #expect(try t.library.filesGone(under: t.directory.path).isEmpty, "an offline book's files are neither present nor missing")
        #expect(try t.library.availability() == LibraryAvailability(offlineBooks: 1, missingFiles: 0))

        #expect(try t.library.setOffline([book], false) == [book])
        #expect(try t.library.book(book) == before, "back as it was: place, settings, dates")
        #expect(try t.library.files(of: book) == files)
    }

    @Test("An import records the mount of the book's folder and makes an offline book available")
    func importSetsMountAndOnline() throws {
        let t = try TestLibrary()
        var imported = importedBook("/media/usb/Dune")
        imported.mountPath = "/media/usb"
        let book = try t.library.add(imported)
        #expect(try t.library.bookPlaces() == [BookPlace(id: book, sourcePath: "/media/usb/Dune", mountPath: "/media/usb", offline: false)])
        try t.library.setOffline([book], true)
        #expect(try t.library.add(imported) == book)
        #expect(try t.library.book(book).offline == false)
    }
}
