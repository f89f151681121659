/// A binary heap: `first` is the element that comes first by `areInOrder`. The elements may be
/// references whose order changes in place; `firstChanged()` restores the heap after the first did.
struct Heap<Element> {
    private var elements: [Element]
    private let areInOrder: (Element, Element) -> Bool

    init(_ elements: [Element], by areInOrder: @escaping (Element, Element) -> Bool) {
        self.elements = elements
        self.areInOrder = areInOrder
        for index in stride(from: elements.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    var first: Element? { elements.first }
    var isEmpty: Bool { elements.isEmpty }

    /// Puts the first element back in its place after its order changed.
    mutating func firstChanged() {
        siftDown(0)
    }

    mutating func removeFirst() {
        elements.swapAt(0, elements.count - 1)
        elements.removeLast()
        if !elements.isEmpty { siftDown(0) }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var next = parent
            if left < elements.count && areInOrder(elements[left], elements[next]) { next = left }
            if right < elements.count && areInOrder(elements[right], elements[next]) { next = right }
            if next == parent { return }
            elements.swapAt(parent, next)
            parent = next
        }
    }
}
