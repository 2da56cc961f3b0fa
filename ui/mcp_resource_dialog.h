// Attach from MCP…: the resources the running MCP servers offer (files, pages, records), listed
// per server; the ones chosen are read and handed back as files for the next message.
#pragma once

#include "services/service_types.h"

#include <QDialog>
#include <QHash>
#include <QList>
#include <QStringList>

class QDialogButtonBox;
class QLabel;
class QListWidget;

namespace hearth::app {
class McpClient;
class McpHost;
} // namespace hearth::app

namespace hearth::ui {

class McpResourceDialog : public QDialog {
    Q_OBJECT
public:
    // Asks every ready server that offers resources for its list at once.
    explicit McpResourceDialog(app::McpHost* host, QWidget* parent = nullptr);

    QListWidget* list() const { return m_list; }
    bool isListing() const { return m_listing > 0; }
    // What was read for the chosen resources (after accept), and what could not be.
    QList<app::ChatDocument> documents() const { return m_documents; }
    QStringList problems() const { return m_problems; }

    // Reads the chosen resources, then accepts (the OK button does this).
    void readChosen();

private:
    void listed(app::McpClient* client, const QList<QVariant>& items);
    void finishOne();

    app::McpHost* m_host;
    QListWidget* m_list = nullptr;
    QLabel* m_status = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    int m_listing = 0;  // servers still listing
    int m_reading = 0;  // resources still being read
    QList<app::ChatDocument> m_documents;
    QStringList m_problems;
};

} // namespace hearth::ui
