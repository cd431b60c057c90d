import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Shelves")
struct ShelfTests {
    @Test("Create at the top level and nested 12 deep")
    func createNested() throws {
        let t = try TestLibrary()
        let library = t.library
        let top = try library.createShelf(named: "Fantasy", in: nil)
        #expect(top.id != nil)
        #expect(top.parentId == nil)
        #expect(top.name == "Fantasy")
        var chain = [top.id!]
        for depth in 1...12 {
            let shelf = try library.createShelf(named: "Level \(depth)", in: chain.last!)
            #expect(shelf.parentId == chain.last!)
            #expect(shelf.name == "Level \(depth)")
            chain.append(shelf.id!)
        }
        #expect(Set(chain).count == 13)
        for (index, id) in chain.dropLast().enumerated() {
            #expect(try library.shelves(in: id).map(\.id) == [chain[index + 1]])
        }
        #expect(try library.shelves(in: chain.last!).isEmpty)
        #expect(try library.shelves(in: nil).map(\.id) == [top.id])
        #expect(try describe(library.shelf(chain.last!)) == "\(chain.last!) in \(chain[11]): Level 12")
        #expect(try library.allShelves().count == 13)
        // A book at the bottom is found recursively from the top.
        let book = try library.add(importedBook("/deep"), into: chain.last!)
        #expect(try library.everyBook(in: top.id, recursive: true).map(\.id) == [book])
        #expect(try library.everyBook(in: top.id, recursive: false).isEmpty)
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("Shelves are listed by parent, ordered by name (case-insensitively), names trimmed")
    func listByParent() throws {
        let t = try TestLibrary()
        let library = t.library
        for name in ["banana", "Cherry", "  apple pie ", "Apple"] { _ = try library.createShelf(named: name, in: nil) }
        let other = try library.createShelf(named: "Other", in: nil)
        for name in ["zeta", "Alpha"] { _ = try library.createShelf(named: name, in: other.id) }
        #expect(try library.shelves(in: nil).map(\.name) == ["Apple", "apple pie", "banana", "Cherry", "Other"])
        #expect(try library.shelves(in: other.id).map(\.name) == ["Alpha", "zeta"])
        #expect(try library.shelves(in: other.id).allSatisfy { $0.parentId == other.id })
    }

    @Test("shelf(atPath:) creates the path once and finds it again")
    func shelfAtPath() throws {
        let t = try TestLibrary()
        let library = t.library
        // A top-level shelf of the same name as the leaf must not be mistaken for it.
        let topDiscworld = try library.createShelf(named: "Discworld", in: nil)
        let id = try #require(try library.shelf(atPath: "Series/Discworld"))
        #expect(id != topDiscworld.id)
        #expect(try library.allShelves().count == 3)
        #expect(try library.shelf(atPath: "Series/Discworld") == id)
        #expect(try library.shelf(atPath: "/Series//Discworld/") == id)
        #expect(try library.shelf(atPath: " Series / Discworld ") == id)
        #expect(try library.allShelves().count == 3)

        let series = try #require(try library.shelves(in: nil).first { $0.name == "Series" })
        #expect(try library.shelf(atPath: "Series") == series.id)
        #expect(try library.shelves(in: series.id).map(describe) == ["\(id) in \(series.id!): Discworld"])
        // Extending the path creates only the new part.
        let witches = try #require(try library.shelf(atPath: "Series/Discworld/Witches"))
        #expect(try library.shelf(witches).parentId == id)
        #expect(try library.allShelves().count == 4)

        #expect(try library.shelf(atPath: "") == nil)
        #expect(try library.shelf(atPath: "/") == nil)
        #expect(try library.allShelves().count == 4)
        // A bad component refuses the whole path and creates nothing.
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.shelf(atPath: "New/ /Deeper") }
        expectError(.invalidArgument) { try library.shelf(atPath: "New/" + String(repeating: "x", count: 1025)) }
        expectError(.invalidArgument) { try library.shelf(atPath: "New/a\u{0}b") }
        #expect(try Snapshot(library) == before)
    }

    @Test("Rename")
    func rename() throws {
        let t = try TestLibrary()
        let library = t.library
        let a = try library.createShelf(named: "A", in: nil)
        let b = try library.createShelf(named: "B", in: nil)
        let inner = try library.createShelf(named: "C", in: a.id)
        try library.renameShelf(a.id!, to: "  Renamed  ")
        #expect(try describe(library.shelf(a.id!)) == "\(a.id!) at the top: Renamed")
        try library.renameShelf(a.id!, to: "Renamed")  // its own name: fine
        // A sibling's name is refused; a name used under another parent is fine.
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.renameShelf(b.id!, to: "Renamed") }
        #expect(try Snapshot(library) == before)
        try library.renameShelf(b.id!, to: "C")
        #expect(try library.shelf(b.id!).name == "C")
        #expect(try library.shelf(inner.id!).name == "C")
        expectError(.notFound) { try library.renameShelf(9999, to: "X") }
    }

    @Test("Duplicate names: refused under the same parent, allowed under another")
    func duplicateNames() throws {
        let t = try TestLibrary()
        let library = t.library
        let a = try library.createShelf(named: "Fantasy", in: nil)
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.createShelf(named: "Fantasy", in: nil) }
        expectError(.invalidArgument) { try library.createShelf(named: "  Fantasy ", in: nil) }
        #expect(try Snapshot(library) == before)
        let nested = try library.createShelf(named: "Fantasy", in: a.id)
        #expect(nested.parentId == a.id)
        expectError(.invalidArgument) { try library.createShelf(named: "Fantasy", in: a.id) }
        let other = try library.createShelf(named: "Other", in: nil)
        _ = try library.createShelf(named: "Fantasy", in: other.id)
        #expect(try library.allShelves().filter { $0.name == "Fantasy" }.count == 3)
    }

    @Test("Invalid names are refused and nothing is created",
          arguments: ["", " ", "   \t\n ", String(repeating: "x", count: 1025), "a\u{0}b", "\u{0}", "  " + String(repeating: "é", count: 1025)])
    func invalidNames(name: String) throws {
        let library = try Library()
        let parent = try library.createShelf(named: "Parent", in: nil)
        expectError(.invalidArgument) { try library.createShelf(named: name, in: nil) }
        expectError(.invalidArgument) { try library.createShelf(named: name, in: parent.id) }
        expectError(.invalidArgument) { try library.renameShelf(parent.id!, to: name) }
        #expect(try library.allShelves() == [parent])
    }

    @Test("A name of exactly 1024 characters is accepted")
    func longestName() throws {
        let library = try Library()
        let name = String(repeating: "x", count: 1024)
        let shelf = try library.createShelf(named: name, in: nil)
        #expect(try library.shelf(shelf.id!).name == name)
        let accented = String(repeating: "é", count: 1024)  // precomposed: one code point each
        #expect(try library.createShelf(named: accented, in: nil).name == accented)
    }

    @Test("A name of 600 characters that are several code points each (flags) is accepted")
    func graphemeLength() throws {
        let library = try Library()
        let name = String(repeating: "🇫🇷", count: 600)  // 600 Characters, 1,200 code points
        #expect(name.count == 600)
        // Lengths are counted in code points, as the schema counts them: a clear refusal, not a CHECK failure.
        expectError(.invalidArgument) { try library.createShelf(named: name, in: nil) }
        let fits = String(repeating: "🇫🇷", count: 512)  // 1,024 code points
        let shelf = try library.createShelf(named: fits, in: nil)
        #expect(try library.shelf(shelf.id!).name == fits)
    }

    @Test("Move into another shelf and to the top level")
    func move() throws {
        let t = try TestLibrary()
        let library = t.library
        let a = try library.createShelf(named: "A", in: nil)
        let b = try library.createShelf(named: "B", in: nil)
        let child = try library.createShelf(named: "Child", in: a.id)
        try library.moveShelf(a.id!, to: b.id)
        #expect(try library.shelf(a.id!).parentId == b.id)
        #expect(try library.shelves(in: nil).map(\.id) == [b.id])
        #expect(try library.shelves(in: b.id).map(\.id) == [a.id])
        #expect(try library.shelf(child.id!).parentId == a.id)
        try library.moveShelf(child.id!, to: nil)
        #expect(try library.shelf(child.id!).parentId == nil)
        #expect(try library.shelves(in: nil).map(\.name) == ["B", "Child"])
        #expect(try library.shelves(in: a.id).isEmpty)
        try library.moveShelf(child.id!, to: nil)  // already there: fine
        #expect(try library.shelf(child.id!).parentId == nil)
    }

    @Test("Moving into itself or a descendant is refused and changes nothing")
    func moveIntoDescendant() throws {
        let t = try TestLibrary()
        let library = t.library
        let root = try library.createShelf(named: "Root", in: nil)
        var chain = [root.id!]
        for depth in 1...10 { chain.append(try library.createShelf(named: "L\(depth)", in: chain.last!).id!) }
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.moveShelf(root.id!, to: root.id) }
        expectError(.invalidArgument) { try library.moveShelf(root.id!, to: chain[1]) }
        expectError(.invalidArgument) { try library.moveShelf(root.id!, to: chain[10]) }
        expectError(.invalidArgument) { try library.moveShelf(chain[4], to: chain[9]) }
        expectError(.invalidArgument) { try library.moveShelf(chain[4], to: chain[4]) }
        #expect(try Snapshot(library) == before)
        // Up the chain is fine.
        try library.moveShelf(chain[9], to: chain[2])
        #expect(try library.shelf(chain[9]).parentId == chain[2])
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("Moving next to a shelf of the same name is refused")
    func moveOntoSameName() throws {
        let library = try Library()
        let a = try library.createShelf(named: "A", in: nil)
        let inner = try library.createShelf(named: "X", in: a.id)
        _ = try library.createShelf(named: "X", in: nil)
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.moveShelf(inner.id!, to: nil) }
        #expect(try Snapshot(library) == before)
    }

    @Test("Delete: an empty shelf; a non-empty one only recursively")
    func delete() throws {
        let t = try TestLibrary()
        let library = t.library
        let empty = try library.createShelf(named: "Empty", in: nil)
        try library.deleteShelf(empty.id!, recursive: false)
        expectError(.notFound) { try library.shelf(empty.id!) }
        #expect(try library.allShelves().isEmpty)

        let withShelf = try library.createShelf(named: "WithShelf", in: nil)
        _ = try library.createShelf(named: "Inner", in: withShelf.id)
        let withBook = try library.createShelf(named: "WithBook", in: nil)
        try library.add(importedBook("/b"), into: withBook.id)
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.deleteShelf(withShelf.id!, recursive: false) }
        expectError(.invalidArgument) { try library.deleteShelf(withBook.id!, recursive: false) }
        #expect(try Snapshot(library) == before)
        let emptyAgain = try library.createShelf(named: "Empty", in: nil)
        try library.deleteShelf(emptyAgain.id!, recursive: true)  // recursive on an empty one: fine too
        #expect(try Snapshot(library) == before)
    }

    @Test("Recursive delete takes sub-shelves, their books and those books' bookmarks, and nothing else")
    func recursiveDelete() async throws {
        let t = try TestLibrary()
        let library = t.library
        let root = try library.createShelf(named: "Root", in: nil)
        let a = try library.createShelf(named: "A", in: root.id)
        let a1 = try library.createShelf(named: "A1", in: a.id)
        let b = try library.createShelf(named: "B", in: root.id)
        let keep = try library.createShelf(named: "Keep", in: nil)
        let keepInner = try library.createShelf(named: "A", in: keep.id)
        var doomed: [Int64] = []
        var doomedBookmarks: [Int64] = []
        for (index, shelf) in [root, a, a1, b].enumerated() {
            let id = try library.add(importedBook("/doomed/\(index)"), into: shelf.id)
            doomed.append(id)
            doomedBookmarks.append(try library.addBookmark(to: id, file: try library.fileIds(of: id)[1], offset: 5, title: "m").id!)
        }
        let kept = try [library.add(importedBook("/kept/top")), library.add(importedBook("/kept/shelf"), into: keepInner.id)]
        var keptBookmarks: [Int64] = []
        for id in kept {
            keptBookmarks.append(try library.addBookmark(to: id, file: try library.fileIds(of: id)[0], offset: 1, title: "k").id!)
        }

        try library.deleteShelf(root.id!, recursive: true)

        for id in [root.id!, a.id!, a1.id!, b.id!] { expectError(.notFound) { try library.shelf(id) } }
        for id in doomed {
            expectError(.notFound) { try library.book(id) }
            expectError(.notFound) { try library.files(of: id) }
            expectError(.notFound) { try library.chapters(of: id) }
        }
        for id in doomedBookmarks { expectError(.notFound) { try library.bookmark(id) } }
        #expect(try library.totals(of: doomed).isEmpty)
        #expect(try library.allShelves().compactMap(\.id).sorted() == [keep.id!, keepInner.id!])
        #expect(try library.everyBook(in: nil, recursive: true).compactMap(\.id).sorted() == kept.sorted())
        for id in keptBookmarks { #expect(try library.bookmark(id).title == "k") }
        #expect(try library.bookCount() == 2)
        #expect(try library.integrityCheck() == "ok")
        if let orphans = try await sqlite3(t.path, "SELECT (SELECT count(*) FROM bookFile) || ' ' || (SELECT count(*) FROM bookmark) || ' ' || (SELECT count(*) FROM chapter)") {
            #expect(orphans == ["6 2 0"])
        }
    }

    @Test("Deleting a shelf that holds the current book clears the current book")
    func recursiveDeleteClearsCurrentBook() throws {
        let t = try TestLibrary()
        let library = t.library
        let shelf = try library.createShelf(named: "S", in: nil)
        let inner = try library.createShelf(named: "Inner", in: shelf.id)
        let book = try library.add(importedBook("/current"), into: inner.id)
        try library.setCurrentBook(book)
        try library.deleteShelf(shelf.id!, recursive: true)
        expectError(.notFound) { try library.book(book) }
        #expect(try library.currentBook() == nil)
    }

    @Test("Unknown shelf ids are .notFound")
    func unknownIds() throws {
        let library = try Library()
        let real = try library.createShelf(named: "Real", in: nil)
        expectError(.notFound) { try library.shelf(4242) }
        expectError(.notFound) { try library.createShelf(named: "X", in: 4242) }
        expectError(.notFound) { try library.renameShelf(4242, to: "X") }
        expectError(.notFound) { try library.moveShelf(4242, to: nil) }
        expectError(.notFound) { try library.moveShelf(real.id!, to: 4242) }
        expectError(.notFound) { try library.deleteShelf(4242, recursive: true) }
        expectError(.notFound) { try library.everyBook(in: 4242, recursive: false) }
        expectError(.notFound) { try library.shelves(in: 4242) }
        expectError(.notFound) { try library.importBook(importedBook("/x"), into: 4242) }
        let book = try library.add(importedBook("/y"))
        expectError(.notFound) { try library.moveBook(book, to: 4242) }
        #expect(try library.book(book).shelfId == nil)
        #expect(try library.allShelves() == [real])
    }
}
