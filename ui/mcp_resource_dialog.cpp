// The MCP resource picker (see mcp_resource_dialog.h).
#include "mcp_resource_dialog.h"

#include "services/mcp_host.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace hearth::ui {

namespace {
constexpr int kUriRole = Qt::UserRole;
constexpr int kServerRole = Qt::UserRole + 1;
constexpr int kNameRole = Qt::UserRole + 2;
} // namespace

McpResourceDialog::McpResourceDialog(app::McpHost* host, QWidget* parent) : QDialog(parent), m_host(host) {
    setWindowTitle(tr("Attach from MCP servers"));
    resize(560, 420);
    auto* layout = new QVBoxLayout(this);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    m_list = new QListWidget(this);
    m_list->setObjectName(QStringLiteral("mcpResources"));
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    layout->addWidget(m_list, 1);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Attach"));
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &McpResourceDialog::readChosen);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QListWidget::itemDoubleClicked, this, &McpResourceDialog::readChosen);

    for (const app::McpServerConfig& s : m_host->servers()) {
        app::McpClient* client = m_host->client(s.name);
        if (!client || client->state() != app::McpClient::State::Ready || !client->offersResources()) continue;
        ++m_listing;
        const quint64 ticket = client->listResources();
        connect(client, &app::McpClient::resourcesListed, this,
                [this, client, ticket](quint64 t, const QList<app::McpResource>& resources) {
                    if (t != ticket) return;
                    QList<QVariant> items;
                    for (const app::McpResource& r : resources) items << QVariant::fromValue(r);
                    listed(client, items);
                });
        connect(client, &app::McpClient::resourceFailed, this, [this, client, ticket](quint64 t, const QString& why) {
            if (t != ticket) return;
            m_problems << tr("%1: %2").arg(client->config().name, why);
            listed(client, {});
        });
    }
    m_status->setText(m_listing > 0 ? tr("Asking the servers for their resources…")
                                    : tr("No running MCP server offers resources (Tools › MCP servers… starts them)."));
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(false);
}

void McpResourceDialog::listed(app::McpClient* client, const QList<QVariant>& items) {
    for (const QVariant& v : items) {
        const auto r = v.value<app::McpResource>();
        const QString name = !r.title.isEmpty() ? r.title : !r.name.isEmpty() ? r.name : r.uri;
        auto* item = new QListWidgetItem(QStringLiteral("%1 · %2").arg(client->config().name, name), m_list);
        item->setToolTip(r.description.isEmpty() ? r.uri : r.description + QStringLiteral("\n") + r.uri);
        item->setData(kUriRole, r.uri);
        item->setData(kServerRole, client->config().name);
        item->setData(kNameRole, r.name.isEmpty() ? name : r.name);
    }
    if (--m_listing > 0) return;
    m_status->setText(m_list->count() > 0 ? tr("Choose resources to attach to your next message.")
                                          : tr("The servers offer no resources.") +
                                                (m_problems.isEmpty() ? QString() : QStringLiteral(" ") + m_problems.join(QStringLiteral("; "))));
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(m_list->count() > 0);
}

void McpResourceDialog::readChosen() {
    const QList<QListWidgetItem*> chosen = m_list->selectedItems();
    if (chosen.isEmpty() || m_reading > 0) return;
    m_buttons->setEnabled(false);
    m_status->setText(tr("Reading…"));
    m_reading = int(chosen.size());
    for (QListWidgetItem* item : chosen) {
        app::McpClient* client = m_host->client(item->data(kServerRole).toString());
        const QString name = item->data(kNameRole).toString();
        if (!client) {
            m_problems << tr("%1: its server stopped").arg(name);
            finishOne();
            continue;
        }
        const quint64 ticket = client->readResource(item->data(kUriRole).toString());
        connect(client, &app::McpClient::resourceRead, this, [this, ticket, name](quint64 t, const QString&, const QString& text) {
            if (t != ticket) return;
            m_documents << app::ChatDocument{name, text};
            finishOne();
        });
        connect(client, &app::McpClient::resourceFailed, this, [this, ticket, name](quint64 t, const QString& why) {
            if (t != ticket) return;
            m_problems << tr("%1: %2").arg(name, why);
            finishOne();
        });
    }
}

void McpResourceDialog::finishOne() {
    if (--m_reading > 0) return;
    accept();
}

} // namespace hearth::ui
