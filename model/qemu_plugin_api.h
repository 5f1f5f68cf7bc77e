/*
 * The part of QEMU's TCG plugin API that the cost model uses, declared here because
 * Debian ships no plugin header. Written from QEMU's documented plugin API (API version
 * 4, the one QEMU 9.2 and 10.0 implement; QEMU 10.0 accepts plugins declaring 2..4).
 * Only what model/ calls is declared; every signature was checked against the API
 * documentation for that version. (Scoreboards and inline per-vCPU ops are not used:
 * under round-robin TCG with several vCPUs QEMU 10.0 crashes on them, see costmodel.c.) glib types that cross the API (GArray, GByteArray)
 * are declared by their documented public layout (a data pointer and a length); the
 * glib functions used on them come from the QEMU process, which links glib.
 */
#ifndef BAREMM_MODEL_QEMU_PLUGIN_API_H
#define BAREMM_MODEL_QEMU_PLUGIN_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QPAPI_EXPORT __attribute__((visibility("default")))

/* The API version this plugin is written against. */
#define BAREMM_QEMU_PLUGIN_VERSION 4

typedef uint64_t qemu_plugin_id_t;

/* Passed to qemu_plugin_install(): field order and types follow the API's qemu_info_t. */
typedef struct qemu_info_t {
	const char *target_name;
	struct {
		int min;	/* oldest API version this QEMU accepts */
		int cur;	/* API version this QEMU implements */
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};

enum qemu_plugin_mem_rw {
	QEMU_PLUGIN_MEM_R = 1,
	QEMU_PLUGIN_MEM_W,
	QEMU_PLUGIN_MEM_RW,
};


struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;
struct qemu_plugin_register;

typedef uint32_t qemu_plugin_meminfo_t;

typedef struct {
	struct qemu_plugin_register *handle;
	const char *name;
	const char *feature;
} qemu_plugin_reg_descriptor;

/* glib's public array layouts (GArray: gchar *data; guint len. GByteArray: guint8 *data;
 * guint len). */
typedef struct {
	char *data;
	unsigned int len;
} GArray;
typedef struct {
	uint8_t *data;
	unsigned int len;
} GByteArray;

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *userdata);

/* What the plugin exports. */
QPAPI_EXPORT extern int qemu_plugin_version;
QPAPI_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
				     char **argv);

/* What QEMU provides. */
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
size_t qemu_plugin_insn_data(const struct qemu_plugin_insn *insn, void *dest, size_t len);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
				      void *userdata);


struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info, uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
/* the value a memory access loaded or stored (QEMU 9.1+; used for xAPIC ICR writes) */
enum qemu_plugin_mem_value_type {
	QEMU_PLUGIN_MEM_VALUE_U8,
	QEMU_PLUGIN_MEM_VALUE_U16,
	QEMU_PLUGIN_MEM_VALUE_U32,
	QEMU_PLUGIN_MEM_VALUE_U64,
	QEMU_PLUGIN_MEM_VALUE_U128,
};
typedef struct {
	enum qemu_plugin_mem_value_type type;
	union {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		struct {
			uint64_t low;
			uint64_t high;
		} u128;
	} data;
} qemu_plugin_mem_value;
qemu_plugin_mem_value qemu_plugin_mem_get_value(qemu_plugin_meminfo_t info);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);

GArray *qemu_plugin_get_registers(void);
int qemu_plugin_read_register(struct qemu_plugin_register *handle, GByteArray *buf);
bool qemu_plugin_read_memory_vaddr(uint64_t addr, GByteArray *data, size_t len);

void qemu_plugin_outs(const char *string);
int qemu_plugin_num_vcpus(void);

/* glib, provided by the QEMU process. */
char *g_array_free(GArray *array, int free_segment);
GByteArray *g_byte_array_new(void);
GByteArray *g_byte_array_set_size(GByteArray *array, unsigned int length);

#endif
