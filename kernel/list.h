/* Circular doubly linked lists, the shape every mm developer knows. Not thread-safe. */
#ifndef BAREMM_LIST_H
#define BAREMM_LIST_H

#include "kernel/types.h"

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)

static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l;
	l->prev = l;
}
static inline void __list_add(struct list_head *n, struct list_head *prev, struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}
static inline void list_add(struct list_head *n, struct list_head *head) { __list_add(n, head, head->next); }
static inline void list_add_tail(struct list_head *n, struct list_head *head) { __list_add(n, head->prev, head); }
static inline void list_del(struct list_head *e)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
	e->next = e->prev = NULL;
}
static inline void list_del_init(struct list_head *e)
{
	list_del(e);
	INIT_LIST_HEAD(e);
}
static inline bool list_empty(const struct list_head *h) { return h->next == h; }
static inline void list_move(struct list_head *e, struct list_head *head)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
	list_add(e, head);
}
static inline void list_move_tail(struct list_head *e, struct list_head *head)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
	list_add_tail(e, head);
}
/* Move all of @list to the back of @head; @list is left empty. */
static inline void list_splice_tail_init(struct list_head *list, struct list_head *head)
{
	if (list_empty(list))
		return;
	struct list_head *first = list->next, *last = list->prev, *at = head->prev;
	at->next = first;
	first->prev = at;
	last->next = head;
	head->prev = last;
	INIT_LIST_HEAD(list);
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)
#define list_last_entry(head, type, member) list_entry((head)->prev, type, member)
#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define list_for_each_entry(pos, head, member)                                  \
	for ((pos) = list_entry((head)->next, __typeof__(*(pos)), member);      \
	     &(pos)->member != (head);                                          \
	     (pos) = list_entry((pos)->member.next, __typeof__(*(pos)), member))
#define list_for_each_entry_safe(pos, n, head, member)                          \
	for ((pos) = list_entry((head)->next, __typeof__(*(pos)), member),      \
	    (n) = list_entry((pos)->member.next, __typeof__(*(pos)), member);   \
	     &(pos)->member != (head);                                          \
	     (pos) = (n), (n) = list_entry((n)->member.next, __typeof__(*(n)), member))

#endif
