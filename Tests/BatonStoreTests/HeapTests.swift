@testable import BatonStore
import BatonCore
import Testing

@Suite("Heap")
struct HeapTests {
    /// Sizes around the levels of a binary tree, with duplicates.
    @Test("removing the first element each time gives the elements in order", arguments: [0, 1, 2, 3, 7, 8, 100])
    func order(count: Int) {
        var generator = SplitMix(seed: UInt64(count))
        let values = (0..<count).map { _ in Int(generator.next() % 50) }
        var heap = Heap(values, by: <)
        var out: [Int] = []
        while let first = heap.first {
            out.append(first)
            heap.removeFirst()
        }
        #expect(out == values.sorted())
    }

    @Test("a first element whose order changed in place goes back to its place")
    func changed() {
        final class Box { var value: Int; init(_ value: Int) { self.value = value } }
        var heap = Heap([5, 1, 3].map(Box.init), by: { $0.value < $1.value })
        heap.first?.value = 4
        heap.firstChanged()
        var out: [Int] = []
        while let first = heap.first {
            out.append(first.value)
            heap.removeFirst()
        }
        #expect(out == [3, 4, 5])
    }
}
